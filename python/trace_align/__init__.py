"""The `align-cli` binary of trace-align, installed by this wheel.

`find_align_cli_bin()` gives its path; `python -m trace_align ARGS` runs it.
"""

import os
import sys
import sysconfig

__all__ = ["find_align_cli_bin"]

_EXE = "align-cli" + (sysconfig.get_config_var("EXE") or "")


def _candidates():
    # The environment this package is installed in (a virtualenv, conda,
    # the system), then a `pip install --user`, then `pip install --target`
    # (the binary beside the package's folder, in `bin/`).
    yield sysconfig.get_path("scripts")
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if user_scheme is not None and user_scheme in sysconfig.get_scheme_names():
        yield sysconfig.get_path("scripts", scheme=user_scheme)
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(os.path.dirname(here), "bin")


def find_align_cli_bin():
    """The path of the `align-cli` binary this wheel installed.

    Raises FileNotFoundError naming every place looked in.
    """
    looked = []
    for folder in _candidates():
        if not folder:
            continue
        path = os.path.join(folder, _EXE)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        looked.append(path)
    raise FileNotFoundError(
        "align-cli is not installed beside this Python package; looked at: "
        + ", ".join(looked)
    )
