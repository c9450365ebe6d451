"""The part of ``spack.package`` the ringrt recipe uses, recording what the
recipe declares (DIRECTIVES) instead of acting on it."""
import contextlib
import os

#: (directive, args, kwargs) in the order the recipe's class body calls them.
DIRECTIVES = []


def _directive(name):
    def record(*args, **kwargs):
        DIRECTIVES.append((name, args, kwargs))
    record.__name__ = name
    return record


version = _directive("version")
variant = _directive("variant")
depends_on = _directive("depends_on")
conflicts = _directive("conflicts")
extends = _directive("extends")
license = _directive("license")
generator = _directive("generator")


def run_after(phase, when=None):
    def mark(fn):
        fn.run_after = phase
        return fn
    return mark


@contextlib.contextmanager
def working_dir(path):
    yield path


join_path = os.path.join
make_jobs = 2
python_platlib = "/stub/python/site-packages"


def which(name):
    return None


def mkdirp(path):
    raise RuntimeError("the stub does not install")


install_tree = find_libraries = mkdirp


class CMakePackage:
    """Spack's CMakePackage, as far as cmake_args needs it."""

    run_tests = False

    def __init__(self, spec):
        self.spec = spec

    @staticmethod
    def define(name, value):
        """Spack's define: booleans as BOOL ON/OFF, the rest as STRING."""
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        return f"-D{name}:STRING={value}"
