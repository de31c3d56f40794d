"""Workers: claim jobs from the bucket's queue, convert, upload results, release."""
