import sys

from tests.mutants.runner import main

if __name__ == "__main__":
    sys.exit(main())
