"""initmem: does a deep network still remember its initialization?"""

__version__ = "0.1.0"
