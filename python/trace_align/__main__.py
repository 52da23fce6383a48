"""`python -m trace_align ARGS`: run the installed `align-cli` with ARGS."""

import os
import subprocess
import sys

from trace_align import find_align_cli_bin


def main():
    binary = find_align_cli_bin()
    if os.name == "posix":
        # Replace this process: signals (SIGINT, SIGTERM) and the exit
        # status reach align-cli as if it had been run directly.
        os.execv(binary, [binary, *sys.argv[1:]])
    sys.exit(subprocess.call([binary, *sys.argv[1:]]))


if __name__ == "__main__":
    main()
