"""Imported first by the fork server that digester children start from (:mod:`sandbox`), so
that the libraries it imports after load no model (:func:`model_threads.hold_back_models`)."""

from bucketdigest.worker.model_threads import hold_back_models

hold_back_models()
