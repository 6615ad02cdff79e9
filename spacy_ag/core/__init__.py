"""The inference core: compiled grammar arrays, sampler state and numba kernels."""
