//! `face_landmark` output decoding: 468 mesh points in source coordinates, the face presence, a
//! head pose and an anchor (centre, size, roll) to attach something to the face.
//!
//! The model takes a 192×192 crop (see [`crate::face_roi`]) and returns `1×1×1×1404` values
//! (468 × `x, y, z`, `x, y` in crop pixels, `z` relative depth in the same pixel scale, smaller =
//! closer to the camera) and a `1×1×1×1` face-flag logit. As MediaPipe (`TensorsToLandmarks` with
//! `input_image_width/height: 192`, then `LandmarkProjection`), points are normalised by 192 and
//! mapped through the crop: `x, y` to source uv, `z` scaled by the crop's width, as a fraction of
//! the source width. The presence is the sigmoid of the logit (MediaPipe's `TensorsToFloats` with
//! `activation: SIGMOID`).

use glam::{Mat3, Quat, Vec2, Vec3};

use crate::Rect;
use crate::error::{DecodeError, check_len};
use crate::image::CropTransform;

/// Points in the face mesh.
pub const FACE_MESH_POINTS: usize = 468;
/// face_landmark's input size in pixels (square).
pub const FACE_LANDMARK_INPUT: u32 = 192;

/// Mesh indices used here (MediaPipe's canonical face mesh; "right" = the subject's right, on
/// the image's left for a frontal face).
pub mod index {
    /// Right eye, outer corner.
    pub const RIGHT_EYE_OUTER: usize = 33;
    /// Right eye, inner corner.
    pub const RIGHT_EYE_INNER: usize = 133;
    /// Left eye, inner corner.
    pub const LEFT_EYE_INNER: usize = 362;
    /// Left eye, outer corner.
    pub const LEFT_EYE_OUTER: usize = 263;
    /// Nose tip.
    pub const NOSE_TIP: usize = 1;
    /// Top of the forehead on the midline.
    pub const FOREHEAD: usize = 10;
    /// Chin on the midline.
    pub const CHIN: usize = 152;
    /// Right face edge (cheek, at the height of the eyes/nose).
    pub const RIGHT_CHEEK: usize = 234;
    /// Left face edge.
    pub const LEFT_CHEEK: usize = 454;
}

/// A decoded face mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct FaceMesh {
    /// 468 points: `x, y` in source uv, `z` as a fraction of the source width (MediaPipe's
    /// normalised landmark convention).
    pub points: Vec<Vec3>,
    /// Face presence in `[0, 1]`.
    pub presence: f32,
    /// Source image size in pixels (to measure in pixels, where angles are true).
    pub image_size: Vec2,
}

/// Head orientation from the mesh, in the camera frame x right, y down, z away from the camera
/// (right-handed; the mesh's own axes). A frontal, upright face has the identity rotation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadPose {
    /// Rotation from the face's frame (x: subject's right eye → left eye, y: forehead → chin,
    /// z: into the screen) to the camera frame.
    pub rotation: Quat,
    /// Roll in radians: the eye line's angle on screen, positive clockwise (as MediaPipe's rect
    /// rotation).
    pub roll: f32,
    /// Yaw in radians: positive when the subject's left side (image right) is farther from the
    /// camera than the right, i.e. the face turns towards the image's left.
    pub yaw: f32,
    /// Pitch in radians: positive when the chin is farther from the camera than the forehead,
    /// i.e. the head tilts down.
    pub pitch: f32,
}

impl HeadPose {
    /// The rotation in a y-up, z-towards-the-viewer frame (Bevy's): the same rotation conjugated
    /// by a half turn about x.
    pub fn rotation_y_up(&self) -> Quat {
        let flip = Quat::from_rotation_x(std::f32::consts::PI);
        flip * self.rotation * flip.conjugate()
    }
}

/// Where to attach something (e.g. an emoji) to the face.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaceAnchor {
    /// Face centre in source uv (mean of forehead, chin and both cheek edges).
    pub center: Vec2,
    /// Face size in source pixels: the larger of cheek-to-cheek width and forehead-to-chin
    /// height (independent of roll).
    pub size_px: f32,
    /// Roll in radians, clockwise on screen.
    pub roll: f32,
}

/// Decodes face_landmark's outputs (`landmarks`: 1404 values; `face_flag`: 1 logit) for the
/// crop it was run on (`crop` maps the 192×192 input's uv to source uv) and a `src_w × src_h`
/// source.
pub fn decode_face_mesh(
    landmarks: &[f32],
    face_flag: &[f32],
    crop: &CropTransform,
    src_w: u32,
    src_h: u32,
) -> Result<FaceMesh, DecodeError> {
    check_len("face_landmark landmarks", landmarks, FACE_MESH_POINTS * 3)?;
    check_len("face_landmark face flag", face_flag, 1)?;
    let image_size = Vec2::new(src_w.max(1) as f32, src_h.max(1) as f32);
    let n = FACE_LANDMARK_INPUT as f32;
    // Length of the crop's u axis in source pixels = the crop width in pixels.
    let crop_width_px = (crop.0.matrix2.x_axis * image_size).length();
    let points = landmarks
        .chunks_exact(3)
        .map(|p| {
            let uv = crop.apply(Vec2::new(p[0], p[1]) / n);
            Vec3::new(uv.x, uv.y, p[2] / n * crop_width_px / image_size.x)
        })
        .collect();
    Ok(FaceMesh {
        points,
        presence: 1.0 / (1.0 + (-face_flag[0]).exp()),
        image_size,
    })
}

impl FaceMesh {
    /// Point `i` in source pixels (`z` in the same pixel scale); origin if out of range.
    pub fn point_px(&self, i: usize) -> Vec3 {
        let s = self.image_size;
        self.points
            .get(i)
            .map_or(Vec3::ZERO, |p| Vec3::new(p.x * s.x, p.y * s.y, p.z * s.x))
    }

    /// Point `i` in source uv (`x, y` only); origin if out of range.
    pub fn point_uv(&self, i: usize) -> Vec2 {
        self.points.get(i).map_or(Vec2::ZERO, |p| p.truncate())
    }

    /// Centres of the right and left eyes (mean of each eye's two corners) in source uv.
    pub fn eye_centers(&self) -> (Vec2, Vec2) {
        (
            (self.point_uv(index::RIGHT_EYE_OUTER) + self.point_uv(index::RIGHT_EYE_INNER)) * 0.5,
            (self.point_uv(index::LEFT_EYE_OUTER) + self.point_uv(index::LEFT_EYE_INNER)) * 0.5,
        )
    }

    /// Bounding box of all points (`x, y`) in source uv.
    pub fn bounding_box(&self) -> Rect {
        Rect::bounding(self.points.iter().map(|p| p.truncate())).unwrap_or_default()
    }

    /// Head orientation: x axis along the eye corners (33 → 263), y axis forehead → chin (10 →
    /// 152) made orthogonal to x, z = x × y, all in source pixels with the mesh's depth; roll, yaw
    /// and pitch read from those axes (see [`HeadPose`]).
    pub fn head_pose(&self) -> HeadPose {
        let x_raw = self.point_px(index::LEFT_EYE_OUTER) - self.point_px(index::RIGHT_EYE_OUTER);
        let y_raw = self.point_px(index::CHIN) - self.point_px(index::FOREHEAD);
        let x = x_raw.normalize_or(Vec3::X);
        let y = (y_raw - x * x.dot(y_raw)).normalize_or(Vec3::Y);
        let z = x.cross(y);
        let rotation = Quat::from_mat3(&Mat3::from_cols(x, y, z)).normalize();
        HeadPose {
            rotation,
            roll: x.y.atan2(x.x),
            yaw: x.z.clamp(-1.0, 1.0).asin(),
            pitch: y.z.clamp(-1.0, 1.0).asin(),
        }
    }

    /// Centre, size and roll to anchor something to the face (see [`FaceAnchor`]).
    pub fn anchor(&self) -> FaceAnchor {
        let s = self.image_size;
        let px = |i| self.point_uv(i) * s;
        let (f, c, r, l) = (
            px(index::FOREHEAD),
            px(index::CHIN),
            px(index::RIGHT_CHEEK),
            px(index::LEFT_CHEEK),
        );
        let right_eye = px(index::RIGHT_EYE_OUTER);
        let left_eye = px(index::LEFT_EYE_OUTER);
        let d = left_eye - right_eye;
        FaceAnchor {
            center: (f + c + r + l) / (4.0 * s),
            size_px: f.distance(c).max(r.distance(l)),
            roll: d.y.atan2(d.x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mesh whose key points are a canonical frontal face rotated by `q` (camera frame), on a
    /// 200x100 image; all other points at the centre.
    fn mesh_with_pose(q: Quat) -> FaceMesh {
        let size = Vec2::new(200.0, 100.0);
        let center = Vec3::new(100.0, 50.0, 0.0);
        let mut pts_px = vec![center; FACE_MESH_POINTS];
        let canonical = [
            (index::RIGHT_EYE_OUTER, Vec3::new(-20.0, -10.0, 5.0)),
            (index::RIGHT_EYE_INNER, Vec3::new(-8.0, -10.0, 3.0)),
            (index::LEFT_EYE_INNER, Vec3::new(8.0, -10.0, 3.0)),
            (index::LEFT_EYE_OUTER, Vec3::new(20.0, -10.0, 5.0)),
            (index::FOREHEAD, Vec3::new(0.0, -30.0, 2.0)),
            (index::CHIN, Vec3::new(0.0, 30.0, 2.0)),
            (index::NOSE_TIP, Vec3::new(0.0, 5.0, -10.0)),
            (index::RIGHT_CHEEK, Vec3::new(-25.0, 0.0, 15.0)),
            (index::LEFT_CHEEK, Vec3::new(25.0, 0.0, 15.0)),
        ];
        for (i, p) in canonical {
            pts_px[i] = center + q * p;
        }
        FaceMesh {
            points: pts_px
                .iter()
                .map(|p| Vec3::new(p.x / size.x, p.y / size.y, p.z / size.x))
                .collect(),
            presence: 1.0,
            image_size: size,
        }
    }

    #[test]
    fn head_pose_recovers_single_axis_rotations() {
        let a = 0.3f32;
        // Roll: rotation about the viewing axis z; with y down, positive = clockwise on screen.
        let p = mesh_with_pose(Quat::from_rotation_z(a)).head_pose();
        assert!((p.roll - a).abs() < 1e-5, "{p:?}");
        assert!(p.yaw.abs() < 1e-5 && p.pitch.abs() < 1e-5, "{p:?}");
        assert!(p.rotation.angle_between(Quat::from_rotation_z(a)) < 1e-4);
        // Yaw about y (down): x = (cos a, 0, -sin a), so the left side comes closer: yaw = -a.
        let p = mesh_with_pose(Quat::from_rotation_y(a)).head_pose();
        assert!((p.yaw + a).abs() < 1e-5, "{p:?}");
        assert!(p.roll.abs() < 1e-5 && p.pitch.abs() < 1e-5, "{p:?}");
        // Pitch about x: y = (0, cos a, sin a): the chin goes away: pitch = +a.
        let p = mesh_with_pose(Quat::from_rotation_x(a)).head_pose();
        assert!((p.pitch - a).abs() < 1e-5, "{p:?}");
        assert!(p.roll.abs() < 1e-5 && p.yaw.abs() < 1e-5, "{p:?}");
        // Frontal: identity; y-up version identity too.
        let p = mesh_with_pose(Quat::IDENTITY).head_pose();
        assert!(p.rotation.angle_between(Quat::IDENTITY) < 1e-4);
        assert!(p.rotation_y_up().angle_between(Quat::IDENTITY) < 1e-4);
    }

    #[test]
    fn anchor_by_hand() {
        let m = mesh_with_pose(Quat::IDENTITY);
        let a = m.anchor();
        // Mean of forehead (100,20), chin (100,80), cheeks (75,50), (125,50) = (100, 50) px.
        assert!((a.center - Vec2::new(0.5, 0.5)).abs().max_element() < 1e-6);
        // Height 60 px > width 50 px.
        assert!((a.size_px - 60.0).abs() < 1e-4);
        assert!(a.roll.abs() < 1e-6);
    }

    #[test]
    fn decode_maps_through_the_crop_and_checks_sizes() {
        // Crop: the source's right half (u in [0.5, 1]) of a 400x200 image.
        let crop = CropTransform::from_rows([0.5, 0.0, 0.5, 0.0, 1.0, 0.0]);
        let mut lm = vec![0.0; FACE_MESH_POINTS * 3];
        lm[0] = 96.0; // point 0 at the crop's centre, z = 19.2 crop px
        lm[1] = 96.0;
        lm[2] = 19.2;
        let m = decode_face_mesh(&lm, &[0.0], &crop, 400, 200).unwrap();
        assert_eq!(m.points.len(), FACE_MESH_POINTS);
        assert!(
            (m.points[0].truncate() - Vec2::new(0.75, 0.5))
                .abs()
                .max_element()
                < 1e-6
        );
        // z: 19.2 / 192 of the crop width (200 px) = 20 px = 0.05 of the source width.
        assert!((m.points[0].z - 0.05).abs() < 1e-6);
        assert_eq!(m.presence, 0.5);
        assert!(decode_face_mesh(&lm[..10], &[0.0], &crop, 400, 200).is_err());
        assert!(decode_face_mesh(&lm, &[], &crop, 400, 200).is_err());
    }
}
