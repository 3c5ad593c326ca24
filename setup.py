"""Ship the pattern packs inside the wheel: the top-level patterns/ directory is their source.

A built wheel (pip install ., pipx, a wheelhouse) gets a copy as rebalance_doctor/patterns/,
which core/paths.py finds beside the package. An editable install reads patterns/ in place, so
nothing is copied into the source tree then. Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SOURCE = Path(__file__).resolve().parent / "patterns"


class build_py_with_patterns(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "rebalance_doctor" / "patterns"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": build_py_with_patterns})
