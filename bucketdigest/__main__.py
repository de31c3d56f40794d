"""``python -m bucketdigest`` and the ``bucketdigest`` console script: the command line.

The command line is imported inside :func:`main`, not at the top of this module. The processes a
command starts (the digester child, the indexer, a server's workers) are spawned, and a spawned
child imports its parent's main module again before it runs anything; imported here at the top,
the whole command line (about 1.4 CPU seconds) would load into every child for nothing.
"""


def main() -> None:
    from bucketdigest.cli.main import cli

    cli()


if __name__ == "__main__":
    main()
