"""Loaders for the frameworks RAG builders use: ``bucketdigest.loaders.langchain``
(``pip install bucketdigest[langchain]``) and ``bucketdigest.loaders.llamaindex``
(``bucketdigest[llamaindex]``). Each reads a bucket's chunks (with their pages, headings, blocks
and regions) as the framework's documents, and retrieves by the bucket's own hybrid search."""
