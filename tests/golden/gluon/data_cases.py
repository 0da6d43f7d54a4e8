"""Transform cases shared by make_data_golden.py (MXNet) and tests/test_gluon_data_vision.py
(jbind): each builder takes the library's `gluon.data.vision.transforms` module, so the same
code builds the transform in both. Inputs: 'u8' a (6, 9, 3) uint8 image, 'f32' (7, 5, 3) float32."""


def transform_cases(T):
    return {
        "to_tensor_u8": (T.ToTensor(), "u8"),
        "to_tensor_f32": (T.ToTensor(), "f32"),
        "normalize": (T.Compose([T.ToTensor(), T.Normalize(mean=(0.1, 0.2, 0.3), std=(0.5, 0.6, 0.7))]), "u8"),
        "normalize_scalar": (T.Compose([T.ToTensor(), T.Normalize(0.5, 0.25)]), "f32"),
        "cast_f16": (T.Cast("float16"), "u8"),
        "resize_f32_up": (T.Resize((8, 11)), "f32"),
        "resize_f32_down": (T.Resize((3, 4)), "f32"),
        "resize_f32_square": (T.Resize(4), "f32"),
        "resize_f32_keep": (T.Resize(4, keep_ratio=True), "f32"),
        "resize_u8_keep": (T.Resize(4, keep_ratio=True), "u8"),
        "resize_u8": (T.Resize((5, 4)), "u8"),
        "resize_u8_up": (T.Resize((13, 10)), "u8"),
        "resize_u8_nearest": (T.Resize((5, 4), interpolation=0), "u8"),
        "resize_f32_nearest": (T.Resize((7, 3), interpolation=0), "f32"),
        "resize_f32_cubic_up": (T.Resize((8, 11), interpolation=2), "f32"),
        "resize_f32_cubic_down": (T.Resize((3, 4), interpolation=2), "f32"),
        "resize_u8_cubic": (T.Resize((13, 5), interpolation=2), "u8"),
        "rotate": (T.Compose([T.ToTensor(), T.Rotate(30.0)]), "u8"),
        "rotate_zoom_in": (T.Compose([T.ToTensor(), T.Rotate(-50.0, zoom_in=True)]), "f32"),
        "rotate_zoom_out": (T.Compose([T.ToTensor(), T.Rotate(75.0, zoom_out=True)]), "u8"),
        "center_crop": (T.CenterCrop(4), "u8"),
        "center_crop_wide": (T.CenterCrop((4, 2)), "f32"),
        "center_crop_resize": (T.CenterCrop((12, 4)), "f32"),
        "crop_resize": (T.CropResize(1, 2, 3, 4), "u8"),
        "crop_resize_size": (T.CropResize(1, 2, 3, 4, size=(6, 5), interpolation=1), "f32"),
    }
