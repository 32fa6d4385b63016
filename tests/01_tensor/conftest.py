"""Shared fixtures for the module 01 (`tinytorch.core.tensor`) suite.

Test files here have unique basenames (`test_tensor_*.py`): the module folders start with digits and have no
`__init__.py`, so pytest imports each test file by its basename.
"""
