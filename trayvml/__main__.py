import sys

from trayvml.cli import main

sys.exit(main())
