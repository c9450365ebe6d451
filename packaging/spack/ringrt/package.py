# Spack recipe for ringrt (docs/install.md, Spack). Put this folder into a
# Spack package repository (or `spack repo add` a repository holding it) and
#
#   spack dev-build -d /path/to/ringrt ringrt@0.1.0          # library and the ringrt tool
#   spack dev-build -d /path/to/ringrt ringrt@0.1.0 +python  # + the Python package
#   spack dev-build --test=root -d ... ringrt@0.1.0          # + CTest's quick label (unit)
#
# Each variant maps to the CMake option of the same concern (README,
# Building); tests/packaging/spack_recipe_test.py checks that every variant
# maps to an option the CMake files define and that every library the CMake
# files look for is a dependency here.
import os

from spack.package import *  # noqa: F401,F403

try:  # Spack v1.0 on: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage, generator
except ImportError:  # older Spack: spack.package exports them
    pass


class Ringrt(CMakePackage):
    """A C runtime for distributed GPU work over MPI and NCCL: ring attention,
    distributed level-scheduled ILU(0) and SEACells metacells, with a native
    CPU backend, a command-line tool and a Python package."""

    # No public download yet: install from a checkout, e.g.
    #   spack dev-build -d /path/to/ringrt ringrt@0.1.0 +python
    # (or `spack develop --path /path/to/ringrt ringrt@0.1.0` in an environment).
    license("BSD-3-Clause")

    version("0.1.0")

    generator("ninja")

    # variant -> the CMake option it sets (ON/OFF; the CMake default is AUTO)
    variant("cuda", default=False, description="CUDA backend (RINGRT_CUDA)")
    variant("nccl", default=False, description="NCCL transport for the cuda backend (RINGRT_NCCL)")
    variant("cudnn", default=False, description="cuDNN fused attention path (RINGRT_CUDNN)")
    variant("hdf5", default=True, description=".h5ad input and output (RINGRT_HDF5)")
    variant("blas", default=True, description="OpenBLAS for the SEACells kNN screen (RINGRT_BLAS)")
    variant("hwloc", default=True, description="bind ranks with hwloc (RINGRT_HWLOC)")
    variant("petsc", default=False, description="the PETSc PC plugin (RINGRT_PETSC)")
    variant("python", default=False,
            description="the Python package, next to the library (RINGRT_PYTHON for its tests)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.24:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    depends_on("cuda@11.8:", when="+cuda")
    depends_on("nccl", when="+nccl")
    depends_on("cudnn@9:", when="+cudnn")
    depends_on("hdf5~mpi", when="+hdf5")  # the serial C library, as Debian's libhdf5-dev
    depends_on("zlib-api")  # gzip Matrix Market input; the .h5ad reader needs it
    depends_on("openblas", when="+blas")
    depends_on("hwloc", when="+hwloc")
    depends_on("petsc", when="+petsc")
    extends("python", when="+python")
    depends_on("python@3.9:", when="+python", type=("build", "run"))
    depends_on("py-numpy", when="+python", type="run")
    depends_on("py-mpi4py", when="+python", type="run")

    conflicts("+nccl", when="~cuda", msg="NCCL is the cuda backend's transport")
    conflicts("+cudnn", when="~cuda", msg="cuDNN attention is a path of the cuda backend")

    # variant -> CMake option; the test reads this table too.
    OPTIONS = {"cuda": "RINGRT_CUDA", "nccl": "RINGRT_NCCL", "cudnn": "RINGRT_CUDNN",
               "hdf5": "RINGRT_HDF5", "blas": "RINGRT_BLAS", "hwloc": "RINGRT_HWLOC",
               "petsc": "RINGRT_PETSC"}

    def cmake_args(self):
        spec = self.spec
        args = [self.define("RINGRT_TESTS", self.run_tests)]
        # ON/OFF, never AUTO: what Spack provides is what gets used, and a
        # missing dependency is a configure error, not a feature left out.
        args += [self.define(option, spec.satisfies(f"+{name}"))
                 for name, option in self.OPTIONS.items()]
        if spec.satisfies("+python"):
            args.append(self.define("RINGRT_PYTHON", spec["python"].command.path))
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        if spec.satisfies("+cudnn"):
            args.append(self.define("CUDNN_ROOT", spec["cudnn"].prefix))
        if spec.satisfies("+petsc"):
            args.append(self.define("PETSC_DIR", spec["petsc"].prefix))
        return args

    def check(self):
        """`spack install --test=root`: CTest's quick label (unit: no MPI
        launch, seconds each) in the build folder."""
        with working_dir(self.build_directory):
            ctest = which("ctest")
            ctest("-L", "unit", "--output-on-failure", "-j", str(make_jobs))

    @run_after("install")
    def install_python_package(self):
        """+python: the package into the Python prefix of this install, with
        ringrt/_lib pointing at this install's library and tool (where
        ringrt._lib looks first when RINGRT_LIBRARY/RINGRT_PREFIX are unset)."""
        if not self.spec.satisfies("+python"):
            return
        dest = join_path(python_platlib, "ringrt")
        install_tree(join_path(self.stage.source_path, "python", "ringrt"), dest)
        mkdirp(join_path(dest, "_lib"))
        lib = find_libraries("libringrt", root=self.prefix, shared=True, recursive=True)
        os.symlink(lib[0], join_path(dest, "_lib", "libringrt.so.0"))
        os.symlink(join_path(self.prefix.bin, "ringrt"), join_path(dest, "_lib", "ringrt"))
