"""Builds the package `concord` (python/concord/__init__.py and its two extension modules) with the
project's CMake build, then lets setuptools package the files. See README.md, "From Python".

CONCORD_BUILD_DIR picks the CMake build directory (default: build/pip, configured on first use in
Release with this interpreter); CONCORD_BUILD_JOBS the parallel jobs (default: all cores).
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD_DIR = os.environ.get("CONCORD_BUILD_DIR", os.path.join(ROOT, "build", "pip"))


class CMakeExtension(Extension):
    """An extension module that the CMake target `concord_python` builds."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def run(self):
        build_dir = BUILD_DIR
        if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(
                ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython3_EXECUTABLE={sys.executable}"]
                + (["-G", "Ninja"] if shutil.which("ninja") else [])
            )
        jobs = os.environ.get("CONCORD_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "concord_python", "--parallel", jobs])
        for ext in self.extensions:
            built = os.path.join(build_dir, "python", *ext.name.split(".")[:-1], os.path.basename(self.get_ext_filename(ext.name)))
            if not os.path.isfile(built):
                raise RuntimeError(f"CMake did not build {built} (pybind11-dev and python3-dev installed?)")
            target = self.get_ext_fullpath(ext.name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(built, target)


setup(
    packages=["concord"],
    package_dir={"concord": "python/concord"},
    ext_modules=[CMakeExtension("concord._envs"), CMakeExtension("concord._train")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
    # setuptools' own scratch files (build/lib..., concord.egg-info) go beside CMake's, not into the
    # source tree, whose build/ is the CMake build of scripts/build.sh.
    options={"build": {"build_base": os.path.join(BUILD_DIR, "setuptools")}, "egg_info": {"egg_base": BUILD_DIR}},
)
