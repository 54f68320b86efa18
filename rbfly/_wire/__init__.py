"""
Wire-level helpers shared by the Cython codecs: bounds-checked buffers and
big-endian integer access (see ``buffer.pxd`` and ``byteorder.h``).
"""
