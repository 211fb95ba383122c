//! The virtual documents: A4 pages (a white sheet with real page images on it,
//! `assets/images/page.png` and `text_lines.png`) lying on the desk beside the text the detector
//! finds, turned with the text lines, smoothed over time, hovering a few millimetres over the
//! desk so they cast soft shadows on it. The first page is the one the user writes on (its
//! texture is the ink layer, see [`crate::pen`]); `--quality` adds more pages fanned out beside
//! it.

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use heimdall_bevy::prelude::*;
use heimdall_examples::ar_view::ArView;
use heimdall_examples::quality::QualitySettings;

/// Page size (m): A4.
pub const PAGE_SIZE: Vec2 = Vec2::new(0.21, 0.297);

/// Page texture size (px).
pub const PAGE_PX: UVec2 = UVec2::new(420, 594);

/// Gap between the text on the desk and the page (m).
const GAP_M: f32 = 0.03;

/// The pages and where they are going.
#[derive(Resource, Debug)]
pub struct Pages {
    /// The page the user writes on.
    pub main: Entity,
    /// Its texture (paper, page images and ink).
    pub texture: Handle<Image>,
    /// Where the main page's centre is (desk point) and its turn about the vertical.
    pub position: Vec3,
    /// Its yaw (radians).
    pub yaw: f32,
    /// Whether a text result anchored it yet.
    pub anchored: bool,
    /// Text results that moved it.
    pub anchors: u64,
}

impl Pages {
    /// The main page's point for a desk point `p`, in page uv (origin top left), if on it.
    pub fn page_uv(&self, p: Vec3) -> Option<Vec2> {
        let local = Quat::from_rotation_y(-self.yaw) * (p - self.position);
        let uv = Vec2::new(local.x / PAGE_SIZE.x + 0.5, local.z / PAGE_SIZE.y + 0.5);
        (uv.cmpge(Vec2::ZERO).all() && uv.cmple(Vec2::ONE).all()).then_some(uv)
    }
}

/// The paper: white, with the page images pasted at the top and middle (RGBA8, sRGB).
pub fn paper(images: &[image::RgbaImage]) -> Vec<u8> {
    let (w, h) = (PAGE_PX.x, PAGE_PX.y);
    let mut px = vec![250u8; (w * h * 4) as usize];
    let margin = 24u32;
    let mut y0 = margin;
    for img in images {
        let scale = ((w - 2 * margin) as f32 / img.width() as f32).min(1.0);
        let (iw, ih) = (
            (img.width() as f32 * scale) as u32,
            (img.height() as f32 * scale) as u32,
        );
        if y0 + ih > h - margin {
            break;
        }
        let resized = image::imageops::resize(img, iw, ih, image::imageops::FilterType::Triangle);
        for (x, y, p) in resized.enumerate_pixels() {
            let i = (((y0 + y) * w + margin + x) * 4) as usize;
            px[i..i + 4].copy_from_slice(&p.0);
        }
        y0 += ih + margin;
    }
    px
}

/// The page texture from paper pixels.
pub fn page_image(pixels: Vec<u8>) -> Image {
    Image::new(
        Extent3d {
            width: PAGE_PX.x,
            height: PAGE_PX.y,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        pixels,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::all(),
    )
}

/// Spawns the main page and `quality.instances` more (fanned out beside it, each with its own
/// copy of the paper).
pub fn spawn(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
    images: &mut Assets<Image>,
    paper: Vec<u8>,
    quality: &QualitySettings,
) -> Pages {
    let sheet = meshes.add(Cuboid::new(PAGE_SIZE.x, 0.0015, PAGE_SIZE.y));
    let texture = images.add(page_image(paper.clone()));
    let material = |materials: &mut Assets<StandardMaterial>, t: Handle<Image>| {
        materials.add(StandardMaterial {
            base_color_texture: Some(t),
            perceptual_roughness: 0.9,
            reflectance: 0.2,
            ..default()
        })
    };
    let position = Vec3::new(0.0, 0.0, -0.45);
    let main = commands
        .spawn((
            Mesh3d(sheet.clone()),
            MeshMaterial3d(material(materials, texture.clone())),
            Transform::from_translation(position + Vec3::Y * 0.01),
        ))
        .id();
    let copies = images.add(page_image(paper.clone()));
    let shared = material(materials, copies);
    for i in 0..quality.instances {
        // A fan of pages to the right of the main one, each a little higher.
        let k = i as f32 + 1.0;
        commands.spawn((
            Mesh3d(sheet.clone()),
            MeshMaterial3d(shared.clone()),
            Transform::from_xyz(0.22 + 0.012 * k, 0.01 + 0.002 * k, -0.03 * k)
                .with_rotation(Quat::from_rotation_y(-0.04 * k)),
            ChildOf(main),
        ));
    }
    Pages {
        main,
        texture,
        position,
        yaw: 0.0,
        anchored: false,
        anchors: 0,
    }
}

/// On every text result: the page goes beside the text (on the side with more room in the
/// picture, level with the text's middle, turned with its lines), smoothed.
pub fn anchor_to_text(
    text: Query<&TextRegions, Changed<TextRegions>>,
    frames: Query<&CameraFrame>,
    view: Res<ArView>,
    mut pages: ResMut<Pages>,
) {
    let Some(found) = text.iter().next() else {
        return;
    };
    let Ok(frame) = frames.get(view.source) else {
        return;
    };
    let size = frame.size.as_vec2().max(Vec2::ONE);
    let corners: Vec<Vec2> = found
        .regions
        .iter()
        .flat_map(|r| r.polygon.iter().map(|p| *p / size))
        .collect();
    if corners.is_empty() {
        return;
    }
    // The text's edge with more room beside it in the picture (at mid height), and the
    // direction of its lines on the desk.
    let (lo, hi) = corners.iter().fold((Vec2::MAX, Vec2::MIN), |(lo, hi), p| {
        (lo.min(*p), hi.max(*p))
    });
    let (edge_x, side) = if lo.x > 1.0 - hi.x {
        (lo.x, -1.0)
    } else {
        (hi.x, 1.0)
    };
    let edge = Vec2::new(edge_x, (lo.y + hi.y) / 2.0);
    let first = &found.regions[0].polygon;
    let (a, b) = (first[0] / size, first[1] / size);
    let (Some(p), Some(pa), Some(pb)) = (
        view.floor_point(edge),
        view.floor_point(a),
        view.floor_point(b),
    ) else {
        return;
    };
    let along = (pb - pa).normalize_or(Vec3::X);
    let yaw = -along.z.atan2(along.x);
    let right = Quat::from_rotation_y(yaw) * Vec3::X;
    let target = p + right * side * (GAP_M + PAGE_SIZE.x / 2.0);
    let k = if pages.anchored { 0.2 } else { 1.0 };
    pages.position = pages.position.lerp(target, k);
    pages.yaw += (yaw - pages.yaw) * k;
    pages.anchored = true;
    pages.anchors += 1;
}

/// The main page follows its anchor.
pub fn place_pages(pages: Res<Pages>, mut q: Query<&mut Transform>) {
    if let Ok(mut t) = q.get_mut(pages.main) {
        t.translation = pages.position + Vec3::Y * 0.01;
        t.rotation = Quat::from_rotation_y(pages.yaw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_uv_inverts_the_pose() {
        let pages = Pages {
            main: Entity::PLACEHOLDER,
            texture: Handle::default(),
            position: Vec3::new(0.3, 0.0, -0.5),
            yaw: 0.5,
            anchored: true,
            anchors: 1,
        };
        let uv = Vec2::new(0.25, 0.75);
        let local = Vec3::new((uv.x - 0.5) * PAGE_SIZE.x, 0.0, (uv.y - 0.5) * PAGE_SIZE.y);
        let p = pages.position + Quat::from_rotation_y(pages.yaw) * local;
        assert!((pages.page_uv(p).unwrap() - uv).length() < 1e-5);
        assert!(pages.page_uv(pages.position + Vec3::X).is_none());
    }

    #[test]
    fn paper_holds_the_pasted_images() {
        let img = image::RgbaImage::from_pixel(10, 10, image::Rgba([0, 0, 0, 255]));
        let px = paper(&[img]);
        let at = |x: u32, y: u32| px[((y * PAGE_PX.x + x) * 4) as usize];
        assert_eq!(at(0, 0), 250, "white margin");
        assert_eq!(
            at(30, 30),
            0,
            "the image at the top left, inside the margin"
        );
    }
}
