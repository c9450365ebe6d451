"""A small stand-in for Spack's package API (tests/packaging/spack_recipe_test.py):
just enough of spack.package for packaging/spack/ringrt/package.py to import
and for its directives and cmake_args to be inspected. Not Spack."""
