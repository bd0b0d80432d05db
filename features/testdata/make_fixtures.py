"""Generates the .npy fixtures of features/npy_test.go with NumPy (run: python3 make_fixtures.py).

Each fixture is tiny and its expected contents are restated in the Go test.
"""
import numpy as np

x = np.arange(6, dtype=np.float64).reshape(2, 3) / 4  # [[0, .25, .5], [.75, 1, 1.25]]
np.save("f64_c.npy", x)
np.save("f32_c.npy", x.astype(np.float32))
np.save("f32_fortran.npy", np.asfortranarray(x.astype(np.float32)))
np.save("i64_labels.npy", np.array([2, 0], dtype=np.int64))
np.save("u8_labels.npy", np.array([1, 3], dtype=np.uint8))
np.save("i32_3d.npy", np.zeros((1, 2, 2), dtype=np.int32))
np.save("f32_big_endian.npy", x.astype(">f4"))
