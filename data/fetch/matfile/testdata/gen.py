"""Writes the MAT-file fixtures of matfile_test.go with SciPy (an independent level-5 writer).

Run with Debian's python3-scipy:  /usr/bin/python3 gen.py
The files mirror the Stanford Cars devkit: cars_meta.mat holds class_names, a 1x3 cell array of
char; annos.mat holds annotations, a 1x2 struct array with uint8/uint16 scalar bbox fields, a
uint8 class and a char fname (MATLAB stores small integers in the smallest type, as here).
"""
import numpy as np
import scipy.io

names = np.empty((1, 3), dtype=object)
names[0, :] = ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Élan ü"]

dt = [("bbox_x1", "O"), ("bbox_y1", "O"), ("bbox_x2", "O"), ("bbox_y2", "O"), ("class", "O"), ("fname", "O")]
annos = np.zeros((1, 2), dtype=dt)
annos[0, 0] = (np.uint8(39), np.uint8(116), np.uint16(569), np.uint16(375), np.uint8(14), "00001.jpg")
annos[0, 1] = (np.uint8(36), np.uint8(116), np.uint16(868), np.uint16(587), np.uint8(3), "00002.jpg")

for compress in (False, True):
    suffix = "_z" if compress else ""
    scipy.io.savemat(f"cars_meta{suffix}.mat", {"class_names": names}, do_compression=compress)
    scipy.io.savemat(f"annos{suffix}.mat", {"annotations": annos}, do_compression=compress)

# A 2x3 double matrix, a logical and a 2-row char array, to check column-major order.
scipy.io.savemat("misc.mat", {"m": np.array([[1.5, -2, 3], [4, 5, 6e10]]),
                              "flag": np.array([[True, False]]),
                              "rows": np.array(["ab ", "cde"])})
