//! The couch being shopped for: the glTF model (CC0, `assets/scenes/furniture/`) on a rug, its
//! textured (fabric) parts dressed in one material that style transfer restyles (UVs by box
//! projection, so the styled picture tiles over the cushions the same way whatever UVs the
//! model shipped with), its other parts (chrome) in their own PBR materials; and the catalogue
//! strip at the bottom of the view: `--quality` decides how many more couches it shows, each a
//! full PBR model casting shadows. The parts are spawned from the glTF's meshes and materials
//! once the file is loaded.

use bevy::gltf::{Gltf, GltfMaterial, GltfMesh};
use bevy::light::NotShadowCaster;
use bevy::mesh::VertexAttributeValues;
use bevy::prelude::*;
use heimdall_examples::ar_view::ArView;
use heimdall_examples::quality::QualitySettings;

/// The model, relative to `assets/`.
pub const COUCH_MODEL: &str = "scenes/furniture/couch.glb";

/// Size of one tile of the fabric texture (m).
const FABRIC_TILE_M: f32 = 0.6;

/// Where the couch stands and who put it there.
#[derive(Resource, Debug)]
pub struct Couch {
    /// The root entity (position on the floor and yaw; the model and rug are its children).
    pub root: Entity,
    /// The fabric on every part of the model.
    pub fabric: Handle<StandardMaterial>,
    /// Where it stands now (floor point).
    pub position: Vec3,
    /// Where it is going (smoothed towards).
    pub target: Vec3,
    /// Turn about the vertical (radians).
    pub yaw: f32,
    /// Who placed it last.
    pub placed_by: Placement,
    /// Half size of the model's bounding box (m), once loaded.
    pub half_size: Option<Vec3>,
    /// The model file.
    gltf: Handle<Gltf>,
}

/// Who placed the couch.
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// Nobody yet: in front of the camera.
    Default,
    /// In front of furniture the object detector found (its label).
    Furniture(String),
    /// The user's hand.
    Hand,
}

/// A catalogue couch, turning on its spot.
#[derive(Component)]
struct Turntable(f32);

/// Where a copy of the model goes (the couch itself wears the fabric).
#[derive(Component)]
struct ModelSlot {
    fabric: bool,
}

/// Registers the couch's systems.
pub fn build(app: &mut App) {
    app.add_systems(Update, (build_parts, turn_catalogue));
}

/// Spawns the couch 3 m in front of the camera on a rug, the catalogue strip, and the lamps.
pub fn spawn(
    commands: &mut Commands,
    assets: &AssetServer,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
    quality: &QualitySettings,
    view: &ArView,
) -> Couch {
    let gltf: Handle<Gltf> = assets.load(COUCH_MODEL);
    let fabric = materials.add(StandardMaterial {
        base_color: Color::srgb(0.55, 0.42, 0.33),
        perceptual_roughness: 0.85,
        reflectance: 0.3,
        ..default()
    });
    let position = Vec3::new(0.0, 0.0, -3.0);
    let rug = materials.add(StandardMaterial {
        base_color: Color::srgb(0.78, 0.74, 0.66),
        perceptual_roughness: 0.95,
        ..default()
    });
    let root = commands
        .spawn((
            Transform::from_translation(position),
            Visibility::default(),
            children![(
                Mesh3d(meshes.add(Plane3d::default().mesh().size(2.6, 1.8))),
                MeshMaterial3d(rug),
                Transform::from_xyz(0.0, 0.003, 0.15),
            )],
        ))
        .id();
    commands.spawn((
        ModelSlot { fabric: true },
        Transform::default(),
        Visibility::default(),
        ChildOf(root),
    ));
    // The catalogue: small couches in rows along the bottom of the view, 1.1 m away.
    let per_row = 16usize;
    for i in 0..quality.instances {
        let (row, col) = (i / per_row, i % per_row);
        let n = quality.instances.min(per_row) as f32;
        let x = (col as f32 - (n - 1.0) / 2.0) * 0.12;
        commands.spawn((
            ModelSlot { fabric: false },
            Visibility::default(),
            Transform::from_xyz(x, -0.42 + 0.1 * row as f32, -1.1).with_scale(Vec3::splat(0.045)),
            Turntable(0.6 + 0.05 * i as f32),
            ChildOf(view.camera),
        ));
    }
    // Floor lamps of the showroom: point lights with cube shadow maps.
    for i in 0..quality.point_lights {
        let x = if i % 2 == 0 { 1.6 } else { -1.8 };
        commands.spawn((
            PointLight {
                intensity: 60_000.0,
                range: 8.0,
                shadow_maps_enabled: true,
                color: Color::srgb(1.0, 0.9, 0.75),
                ..default()
            },
            Transform::from_xyz(x, 1.7, -3.2 - i as f32 * 0.5),
            NotShadowCaster,
        ));
    }
    Couch {
        root,
        fabric,
        position,
        target: position,
        yaw: 0.0,
        placed_by: Placement::Default,
        half_size: None,
        gltf,
    }
}

/// Once the model file is loaded: its parts (each glTF mesh primitive with its material) under
/// every model slot, box-projected UVs on the meshes, and the couch's size. Textured materials
/// are the fabric: on the couch itself they become the restyled fabric.
#[allow(clippy::too_many_arguments)]
fn build_parts(
    mut couch: ResMut<Couch>,
    slots: Query<(Entity, &ModelSlot)>,
    assets: Res<AssetServer>,
    gltfs: Res<Assets<Gltf>>,
    gltf_meshes: Res<Assets<GltfMesh>>,
    gltf_materials: Res<Assets<GltfMaterial>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut commands: Commands,
) {
    if couch.half_size.is_some() || !assets.is_loaded_with_dependencies(&couch.gltf) {
        return;
    }
    let Some(gltf) = gltfs.get(&couch.gltf) else {
        return;
    };
    let mut parts = Vec::new();
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for m in gltf.meshes.iter().filter_map(|h| gltf_meshes.get(h)) {
        for p in &m.primitives {
            let g = p.material.as_ref().and_then(|h| gltf_materials.get(h));
            let textured = g.is_some_and(|g| g.base_color_texture.is_some());
            let own = materials.add(match g {
                Some(g) => StandardMaterial {
                    base_color: g.base_color,
                    base_color_texture: g.base_color_texture.clone(),
                    perceptual_roughness: g.perceptual_roughness,
                    metallic: g.metallic,
                    ..default()
                },
                None => StandardMaterial::default(),
            });
            if let Some(mut mesh) = meshes.get_mut(&p.mesh)
                && let Some((a, b)) = box_project_uvs(&mut mesh)
            {
                lo = lo.min(a);
                hi = hi.max(b);
            }
            parts.push((p.mesh.clone(), own, textured));
        }
    }
    if parts.is_empty() || lo.x > hi.x {
        return;
    }
    for (slot, s) in &slots {
        for (mesh, own, textured) in &parts {
            let material = if s.fabric && *textured {
                couch.fabric.clone()
            } else {
                own.clone()
            };
            commands.spawn((
                Mesh3d(mesh.clone()),
                MeshMaterial3d(material),
                Transform::default(),
                ChildOf(slot),
            ));
        }
    }
    couch.half_size = Some((hi - lo) / 2.0);
}

/// Sets `UV_0` of `mesh` from its positions, each triangle corner projected on the plane its
/// normal faces most (a box projection, `FABRIC_TILE_M` per texture repeat); returns the
/// positions' bounds.
fn box_project_uvs(mesh: &mut Mesh) -> Option<(Vec3, Vec3)> {
    let positions: Vec<Vec3> = match mesh.attribute(Mesh::ATTRIBUTE_POSITION)? {
        VertexAttributeValues::Float32x3(p) => p.iter().map(|&p| Vec3::from(p)).collect(),
        _ => return None,
    };
    let normals: Vec<Vec3> = match mesh.attribute(Mesh::ATTRIBUTE_NORMAL) {
        Some(VertexAttributeValues::Float32x3(n)) => n.iter().map(|&n| Vec3::from(n)).collect(),
        _ => vec![Vec3::Y; positions.len()],
    };
    let uvs: Vec<[f32; 2]> = positions
        .iter()
        .zip(&normals)
        .map(|(p, n)| {
            let a = n.abs();
            let uv = if a.x >= a.y && a.x >= a.z {
                Vec2::new(p.z, p.y)
            } else if a.y >= a.z {
                Vec2::new(p.x, p.z)
            } else {
                Vec2::new(p.x, p.y)
            };
            (uv / FABRIC_TILE_M).to_array()
        })
        .collect();
    mesh.insert_attribute(Mesh::ATTRIBUTE_UV_0, uvs);
    let lo = positions.iter().copied().reduce(Vec3::min)?;
    let hi = positions.iter().copied().reduce(Vec3::max)?;
    Some((lo, hi))
}

fn turn_catalogue(time: Res<Time>, mut q: Query<(&mut Transform, &Turntable)>) {
    for (mut t, speed) in &mut q {
        t.rotate_y(speed.0 * time.delta_secs());
    }
}

/// The couch's root follows its target (smoothed) and yaw.
pub fn move_couch(mut couch: ResMut<Couch>, mut q: Query<&mut Transform>) {
    let step = couch.target - couch.position;
    couch.position += step * 0.25;
    if let Ok(mut t) = q.get_mut(couch.root) {
        t.translation = couch.position;
        t.rotation = Quat::from_rotation_y(couch.yaw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::asset::RenderAssetUsages;
    use bevy::mesh::PrimitiveTopology;

    #[test]
    fn uvs_follow_the_face_a_corner_looks_at() {
        let mut m = Mesh::new(PrimitiveTopology::TriangleList, RenderAssetUsages::all());
        m.insert_attribute(
            Mesh::ATTRIBUTE_POSITION,
            vec![[0.6, 1.2, 0.3], [0.6, 1.2, 0.3], [0.6, 1.2, 0.3]],
        );
        m.insert_attribute(
            Mesh::ATTRIBUTE_NORMAL,
            vec![[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]],
        );
        let (lo, hi) = box_project_uvs(&mut m).unwrap();
        assert_eq!(lo, hi);
        let Some(VertexAttributeValues::Float32x2(uv)) = m.attribute(Mesh::ATTRIBUTE_UV_0) else {
            panic!("no uvs");
        };
        // x-facing: (z, y); y-facing: (x, z); z-facing: (x, y); one repeat per 0.6 m.
        let want = [[0.5, 2.0], [1.0, 0.5], [1.0, 2.0]];
        for (got, want) in uv.iter().zip(want) {
            assert!((got[0] - want[0]).abs() < 1e-6 && (got[1] - want[1]).abs() < 1e-6);
        }
    }
}
