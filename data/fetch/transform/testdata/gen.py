"""Writes the fixtures of transform_test.go with Pillow (the library torchvision resizes PIL
images with). Run with Debian's python3-pil:  /usr/bin/python3 gen.py

pattern_W_H_to_w_h.rgb: raw RGB bytes of PIL's Image.resize((w, h), Image.BILINEAR) of the
  W×H pattern image with pixel (x, y) = ((7x+3y) % 256, (x*y+11) % 256, (5x+13y+x*x) % 256),
  which transform_test.go computes too.
pattern_420.jpg, pattern_422.jpg: the 45×31 pattern saved by Pillow with 4:2:0 and 4:2:2 chroma
  subsampling; pattern_420.pil.rgb, pattern_422.pil.rgb: PIL's decoded RGB bytes of them.
cmyk.jpg: a 16×16 flat CMYK JPEG (C, M, Y, K) = (100, 0, 50, 40) as Photoshop would write it
  (Pillow writes Adobe inverted CMYK); PIL's RGB of it is printed and copied into the test.
"""
from PIL import Image

def pattern(w, h):
    img = Image.new("RGB", (w, h))
    img.putdata([((7 * x + 3 * y) % 256, (x * y + 11) % 256, (5 * x + 13 * y + x * x) % 256)
                 for y in range(h) for x in range(w)])
    return img

for (W, H), (w, h) in [((37, 23), (13, 29)), ((37, 23), (50, 9)), ((64, 48), (21, 16))]:
    out = pattern(W, H).resize((w, h), Image.BILINEAR)
    with open(f"pattern_{W}_{H}_to_{w}_{h}.rgb", "wb") as f:
        f.write(out.tobytes())

cmyk = Image.new("CMYK", (16, 16), (100, 0, 50, 40))
cmyk.save("cmyk.jpg", quality=100)
back = Image.open("cmyk.jpg")
print("cmyk.jpg mode", back.mode, "RGB", back.convert("RGB").getpixel((5, 5)), "CMYK", back.getpixel((5, 5)))

for sub, name in [(2, "420"), (1, "422")]:
    pattern(45, 31).save(f"pattern_{name}.jpg", quality=90, subsampling=sub)
    with open(f"pattern_{name}.pil.rgb", "wb") as f:
        f.write(Image.open(f"pattern_{name}.jpg").convert("RGB").tobytes())
