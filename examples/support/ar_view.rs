//! The AR view of the 3D apps (shopping, workspace): one 3D camera standing at eye height over
//! a floor at `y = 0`, the camera picture on a quad far behind the scene (scaled so the picture
//! covers the view, as a phone's camera view does), optionally the person in front of the scene
//! (the picture again, alpha from selfie segmentation's mask, so people occlude the virtual
//! furniture), a sun with cascaded shadows and environment lighting estimated from the picture
//! (a sky/horizon/ground gradient of its mean colours, as AR frameworks' light estimation does).
//!
//! [`ArView::frame_ray`] turns a point of the camera frame (frame uv, where the decoders report
//! hands, objects and text) into a ray of the 3D scene, and [`ArView::frame_uv`] projects a
//! point of the scene back, so the apps place 3D content where the DNNs found things.

use bevy::asset::RenderAssetUsages;
use bevy::camera::{Hdr, RenderTarget};
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::{DirectionalLightShadowMap, NotShadowCaster, NotShadowReceiver};
use bevy::math::Ray3d;
use bevy::post_process::bloom::{Bloom, BloomPrefilter};
use bevy::prelude::*;
use bevy::render::render_resource::{AsBindGroup, Extent3d, TextureDimension, TextureFormat};
use bevy::shader::ShaderRef;
use heimdall_bevy::prelude::*;

use crate::quality::QualitySettings;

/// Registers the camera-layer material and the AR view's systems.
pub struct ArViewPlugin;

const LAYER_SHADER: Handle<Shader> =
    bevy::asset::uuid_handle!("0c6b3f5e-9a7d-4c1e-8f2a-6d5b4e3c2a19");

/// Distance of the background picture from the camera (beyond everything in the room).
const BACKGROUND_DISTANCE: f32 = 60.0;
/// Distance of the person layer (in front of everything).
const PERSON_DISTANCE: f32 = 0.12;

impl Plugin for ArViewPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(MaterialPlugin::<CameraLayerMaterial>::default())
            .add_systems(
                Update,
                (update_layers, estimate_light)
                    .chain()
                    .in_set(ArViewSystems),
            );
        let shader = Shader::from_wgsl(
            include_str!("../shaders/ar_camera_layer.wgsl"),
            "examples/shaders/ar_camera_layer.wgsl",
        );
        if let Err(e) = app
            .world_mut()
            .resource_mut::<Assets<Shader>>()
            .insert(LAYER_SHADER.id(), shader)
        {
            error!("registering the camera layer shader: {e}");
        }
    }
}

/// The AR view's systems (pictures and light follow the camera source); the apps place their
/// content after them.
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArViewSystems;

/// The camera picture as a 3D material: the opaque background, or the person layer.
#[derive(Asset, TypePath, AsBindGroup, Clone, Debug)]
pub struct CameraLayerMaterial {
    /// x: 1 for the person layer, y: 1 when a mask exists, z: extra work iterations.
    #[uniform(0)]
    pub params: Vec4,
    /// The camera frame.
    #[texture(1)]
    #[sampler(2)]
    pub camera: Handle<Image>,
    /// The person mask (`R8`, 1 = person).
    #[texture(3)]
    #[sampler(4)]
    pub mask: Handle<Image>,
}

impl Material for CameraLayerMaterial {
    fn fragment_shader() -> ShaderRef {
        LAYER_SHADER.into()
    }

    fn alpha_mode(&self) -> AlphaMode {
        if self.params.x > 0.5 {
            AlphaMode::Blend
        } else {
            AlphaMode::Opaque
        }
    }
}

/// How the AR view is set up.
#[derive(Clone, Debug)]
pub struct ArViewConfig {
    /// Camera height over the floor (m).
    pub eye_height: f32,
    /// Camera pitch (degrees, negative: looking down).
    pub pitch_deg: f32,
    /// Vertical field of view of the render (degrees).
    pub fov_y_deg: f32,
    /// The DNN entity whose [`PersonMask`] makes people occlude the scene (none: no person
    /// layer).
    pub person_mask: Option<Entity>,
    /// Extra fragment work per background pixel (`--scene-load`).
    pub scene_load: u32,
    /// The render's size in pixels.
    pub render_size: UVec2,
}

/// The AR view: its camera, the camera source it shows, and the projection between the camera
/// frame and the 3D scene.
#[derive(Resource, Clone, Debug)]
pub struct ArView {
    /// The 3D camera.
    pub camera: Entity,
    /// The camera source (a [`CameraSource`] entity).
    pub source: Entity,
    /// The setup.
    pub config: ArViewConfig,
    /// Half size of the camera frame's picture at unit distance in front of the camera.
    pub half_extent: Vec2,
    background: Handle<CameraLayerMaterial>,
    person: Option<Handle<CameraLayerMaterial>>,
    background_quad: Entity,
    person_quad: Option<Entity>,
    sun: Entity,
}

impl ArView {
    /// The camera's pose: at eye height over the origin, looking along −z, pitched.
    pub fn camera_transform(&self) -> Transform {
        camera_transform(&self.config)
    }

    /// The ray of the 3D scene through the camera frame point `uv` (frame uv: origin top left,
    /// y down).
    pub fn frame_ray(&self, uv: Vec2) -> Ray3d {
        let t = self.camera_transform();
        let local = Vec3::new(
            (uv.x - 0.5) * 2.0 * self.half_extent.x,
            (0.5 - uv.y) * 2.0 * self.half_extent.y,
            -1.0,
        );
        let dir = Dir3::new(t.rotation * local).unwrap_or(Dir3::NEG_Z);
        Ray3d::new(t.translation, dir)
    }

    /// Where the ray through `uv` meets the floor (`y = 0`), if it does in front of the camera.
    pub fn floor_point(&self, uv: Vec2) -> Option<Vec3> {
        let ray = self.frame_ray(uv);
        ray.intersect_plane(Vec3::ZERO, InfinitePlane3d::new(Vec3::Y))
            .map(|d| ray.get_point(d))
    }

    /// The camera frame uv of the scene point `p` (none behind the camera).
    pub fn frame_uv(&self, p: Vec3) -> Option<Vec2> {
        let t = self.camera_transform();
        let local = t.rotation.inverse() * (p - t.translation);
        if local.z >= -1e-4 {
            return None;
        }
        let q = local / -local.z;
        Some(Vec2::new(
            0.5 + q.x / (2.0 * self.half_extent.x),
            0.5 - q.y / (2.0 * self.half_extent.y),
        ))
    }

    /// The render uv (the picture on screen: origin top left, y down) of the scene point `p`
    /// (none behind the camera).
    pub fn render_uv(&self, p: Vec3) -> Option<Vec2> {
        let t = self.camera_transform();
        let local = t.rotation.inverse() * (p - t.translation);
        if local.z >= -1e-4 {
            return None;
        }
        let q = local / -local.z;
        let half_h = (self.config.fov_y_deg.to_radians() / 2.0).tan();
        let size = self.config.render_size.as_vec2().max(Vec2::ONE);
        let half_w = half_h * size.x / size.y;
        Some(Vec2::new(
            0.5 + q.x / (2.0 * half_w),
            0.5 - q.y / (2.0 * half_h),
        ))
    }

    /// The sun's entity (a directional light with cascaded shadows).
    pub fn sun(&self) -> Entity {
        self.sun
    }
}

fn camera_transform(c: &ArViewConfig) -> Transform {
    Transform::from_xyz(0.0, c.eye_height, 0.0)
        .with_rotation(Quat::from_rotation_x(c.pitch_deg.to_radians()))
}

/// Half size at unit distance of a picture of `frame` pixels covering a view of `render` pixels
/// with vertical field of view `fov_y` (radians): the picture's aspect is kept and the parts
/// beyond the view are cropped.
pub fn cover_half_extent(frame: UVec2, render: UVec2, fov_y: f32) -> Vec2 {
    let half_h = (fov_y / 2.0).tan();
    let view_aspect = render.x.max(1) as f32 / render.y.max(1) as f32;
    let frame_aspect = frame.x.max(1) as f32 / frame.y.max(1) as f32;
    let half_w = half_h * view_aspect;
    if view_aspect > frame_aspect {
        Vec2::new(half_w, half_w / frame_aspect)
    } else {
        Vec2::new(half_h * frame_aspect, half_h)
    }
}

/// The asset stores [`spawn_ar_view`] adds to.
pub struct ViewAssets<'a> {
    /// Meshes (the picture quads).
    pub meshes: &'a mut Assets<Mesh>,
    /// The picture layers' materials.
    pub materials: &'a mut Assets<CameraLayerMaterial>,
    /// Images (placeholders, the environment light's gradient).
    pub images: &'a mut Assets<Image>,
}

/// Spawns the AR view (camera, picture layers, sun, environment light) and inserts it as a
/// resource. `target`: the harness's render target (headless), else the window.
pub fn spawn_ar_view(
    commands: &mut Commands,
    assets: ViewAssets,
    target: Option<RenderTarget>,
    quality: &QualitySettings,
    source: Entity,
    config: ArViewConfig,
) -> ArView {
    let ViewAssets {
        meshes,
        materials,
        images,
    } = assets;
    let placeholder = images.add(Image::new_fill(
        Extent3d {
            width: 1,
            height: 1,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &[0],
        TextureFormat::R8Unorm,
        RenderAssetUsages::RENDER_WORLD,
    ));
    let fov_y = config.fov_y_deg.to_radians();
    let camera = spawn_view_camera(commands, images, target, quality, &config, fov_y);
    let layers = spawn_picture_layers(commands, meshes, materials, placeholder, camera, &config);
    commands.insert_resource(DirectionalLightShadowMap {
        size: quality.shadow_map_size,
    });
    let sun = commands
        .spawn((
            DirectionalLight {
                illuminance: 6_000.0,
                shadow_maps_enabled: true,
                ..default()
            },
            quality.cascade_config(),
            Transform::from_xyz(2.0, 6.0, 1.0).looking_at(Vec3::new(0.0, 0.0, -3.0), Vec3::Y),
        ))
        .id();
    let half_extent = cover_half_extent(
        UVec2::new(config.render_size.x, config.render_size.y),
        config.render_size,
        fov_y,
    );
    let view = ArView {
        camera,
        source,
        config,
        half_extent,
        background: layers.background,
        person: layers.person,
        background_quad: layers.background_quad,
        person_quad: layers.person_quad,
        sun,
    };
    commands.insert_resource(view.clone());
    view
}

/// The view's 3D camera: perspective with vertical field of view `fov_y` (radians), no tone
/// curve (the camera picture reaches the screen as it is), the environment light, bloom when
/// the quality asks for it, rendering to `target` when given.
fn spawn_view_camera(
    commands: &mut Commands,
    images: &mut Assets<Image>,
    target: Option<RenderTarget>,
    quality: &QualitySettings,
    config: &ArViewConfig,
    fov_y: f32,
) -> Entity {
    let mut camera = commands.spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::BLACK),
            ..default()
        },
        Projection::Perspective(PerspectiveProjection {
            fov: fov_y,
            near: 0.05,
            far: 200.0,
            ..default()
        }),
        camera_transform(config),
        quality.msaa(),
        // The camera picture must reach the screen as it is: no tone curve over it.
        Tonemapping::None,
        IsDefaultUiCamera,
        EnvironmentMapLight {
            intensity: 900.0,
            ..EnvironmentMapLight::hemispherical_gradient(
                images,
                Color::srgb(0.8, 0.8, 0.85),
                Color::srgb(0.6, 0.6, 0.6),
                Color::srgb(0.35, 0.3, 0.25),
            )
        },
    ));
    if quality.bloom {
        // Highlights of the lit scene glow; the picture (≤ 1) stays below the threshold.
        camera.insert((
            Hdr,
            Bloom {
                prefilter: BloomPrefilter {
                    threshold: 1.0,
                    threshold_softness: 0.2,
                },
                ..Bloom::NATURAL
            },
        ));
    }
    if let Some(t) = target {
        camera.insert(t);
    }
    camera.id()
}

/// The picture layers' materials and quads.
struct PictureLayers {
    background: Handle<CameraLayerMaterial>,
    background_quad: Entity,
    person: Option<Handle<CameraLayerMaterial>>,
    person_quad: Option<Entity>,
}

/// The camera picture's quads, children of `camera`: the background far behind the room, and
/// with a person mask the person layer in front of everything (`placeholder` until the first
/// frame and mask).
fn spawn_picture_layers(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<CameraLayerMaterial>,
    placeholder: Handle<Image>,
    camera: Entity,
    config: &ArViewConfig,
) -> PictureLayers {
    let quad = meshes.add(Rectangle::new(1.0, 1.0));
    let background = materials.add(CameraLayerMaterial {
        params: Vec4::new(0.0, 0.0, config.scene_load as f32, 0.0),
        camera: placeholder.clone(),
        mask: placeholder.clone(),
    });
    let background_quad = commands
        .spawn((
            Mesh3d(quad.clone()),
            MeshMaterial3d(background.clone()),
            Transform::from_xyz(0.0, 0.0, -BACKGROUND_DISTANCE),
            NotShadowCaster,
            NotShadowReceiver,
            ChildOf(camera),
        ))
        .id();
    let (person, person_quad) = match config.person_mask {
        Some(_) => {
            let m = materials.add(CameraLayerMaterial {
                params: Vec4::new(1.0, 0.0, 0.0, 0.0),
                camera: placeholder.clone(),
                mask: placeholder,
            });
            let q = commands
                .spawn((
                    Mesh3d(quad),
                    MeshMaterial3d(m.clone()),
                    Transform::from_xyz(0.0, 0.0, -PERSON_DISTANCE),
                    NotShadowCaster,
                    NotShadowReceiver,
                    ChildOf(camera),
                ))
                .id();
            (Some(m), Some(q))
        }
        None => (None, None),
    };
    PictureLayers {
        background,
        background_quad,
        person,
        person_quad,
    }
}

/// The pictures follow the camera source (newest frame) and the person mask; the quads cover
/// the view with the frame's aspect.
fn update_layers(
    mut view: ResMut<ArView>,
    frames: Query<&CameraFrame>,
    masks: Query<&PersonMask>,
    mut transforms: Query<&mut Transform>,
    mut materials: ResMut<Assets<CameraLayerMaterial>>,
) {
    let Ok(frame) = frames.get(view.source) else {
        return;
    };
    let half = cover_half_extent(
        frame.size,
        view.config.render_size,
        view.config.fov_y_deg.to_radians(),
    );
    if view.half_extent != half {
        view.half_extent = half;
    }
    for (quad, d) in [
        (Some(view.background_quad), BACKGROUND_DISTANCE),
        (view.person_quad, PERSON_DISTANCE),
    ] {
        if let Some(Ok(mut t)) = quad.map(|q| transforms.get_mut(q)) {
            let scale = (2.0 * half * d).extend(1.0);
            if t.scale != scale {
                t.scale = scale;
            }
        }
    }
    if let Some(mut m) = materials.get_mut(&view.background)
        && m.camera != frame.image
    {
        m.camera = frame.image.clone();
    }
    let mask = view.config.person_mask.and_then(|e| masks.get(e).ok());
    if let Some(person) = &view.person
        && let Some(mut m) = materials.get_mut(person)
    {
        if m.camera != frame.image {
            m.camera = frame.image.clone();
        }
        if let Some(mask) = mask
            && m.mask != mask.image
        {
            m.mask = mask.image.clone();
            m.params.y = 1.0;
        }
    }
}

/// About twice a second: the environment light's sky, horizon and ground colours from the mean
/// colours of the picture's top, middle and bottom thirds (a light estimate from the camera).
fn estimate_light(
    view: Res<ArView>,
    frames: Query<&CameraFrame>,
    mut lights: Query<&mut EnvironmentMapLight>,
    mut images: ResMut<Assets<Image>>,
    mut last: Local<Option<u64>>,
) {
    let Ok(frame) = frames.get(view.source) else {
        return;
    };
    if last.is_some_and(|l| frame.index < l + 15) {
        return;
    }
    *last = Some(frame.index);
    let Some([top, mid, bottom]) = thirds_mean(&frame.pixels, frame.size) else {
        return;
    };
    let Ok(mut light) = lights.get_mut(view.camera) else {
        return;
    };
    let old = light.diffuse_map.clone();
    let new = EnvironmentMapLight::hemispherical_gradient(&mut images, top, mid, bottom);
    light.diffuse_map = new.diffuse_map;
    light.specular_map = new.specular_map;
    images.remove(&old);
}

/// Mean sRGB colour of the top, middle and bottom thirds of an RGBA8 frame (sampled every 4th
/// pixel and row).
pub fn thirds_mean(pixels: &[u8], size: UVec2) -> Option<[Color; 3]> {
    let (w, h) = (size.x as usize, size.y as usize);
    if w == 0 || h < 3 || pixels.len() < w * h * 4 {
        return None;
    }
    let mut sums = [[0f64; 4]; 3];
    for y in (0..h).step_by(4) {
        let band = (y * 3 / h).min(2);
        for x in (0..w).step_by(4) {
            let i = (y * w + x) * 4;
            for c in 0..3 {
                sums[band][c] += pixels[i + c] as f64;
            }
            sums[band][3] += 1.0;
        }
    }
    let mean = |s: [f64; 4]| {
        let n = s[3].max(1.0) * 255.0;
        Color::srgb((s[0] / n) as f32, (s[1] / n) as f32, (s[2] / n) as f32)
    };
    Some([mean(sums[0]), mean(sums[1]), mean(sums[2])])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(frame: UVec2, render: UVec2) -> ArView {
        let config = ArViewConfig {
            eye_height: 1.4,
            pitch_deg: -20.0,
            fov_y_deg: 55.0,
            person_mask: None,
            scene_load: 0,
            render_size: render,
        };
        ArView {
            camera: Entity::PLACEHOLDER,
            source: Entity::PLACEHOLDER,
            half_extent: cover_half_extent(frame, render, config.fov_y_deg.to_radians()),
            config,
            background: Handle::default(),
            person: None,
            background_quad: Entity::PLACEHOLDER,
            person_quad: None,
            sun: Entity::PLACEHOLDER,
        }
    }

    #[test]
    fn picture_covers_the_view() {
        let fov = 55f32.to_radians();
        let t = (fov / 2.0).tan();
        // A 4:3 frame on a 16:9 render: full width, cropped top and bottom.
        let e = cover_half_extent(UVec2::new(640, 480), UVec2::new(1280, 720), fov);
        assert!((e.x - t * 16.0 / 9.0).abs() < 1e-6 && e.y > t);
        // A 16:9 frame on a 4:3 render: full height, cropped sides.
        let e = cover_half_extent(UVec2::new(1280, 720), UVec2::new(640, 480), fov);
        assert!((e.y - t).abs() < 1e-6 && e.x > t * 4.0 / 3.0);
    }

    #[test]
    fn frame_ray_and_projection_agree() {
        let v = view(UVec2::new(320, 180), UVec2::new(640, 360));
        for uv in [
            Vec2::new(0.5, 0.5),
            Vec2::new(0.1, 0.9),
            Vec2::new(0.8, 0.7),
        ] {
            let p = v.frame_ray(uv).get_point(3.0);
            let back = v.frame_uv(p).unwrap();
            assert!((back - uv).length() < 1e-5, "{uv} -> {back}");
        }
        // The frame centre, camera pitched down 20° from 1.4 m: the floor 1.4 / tan(20°) ahead.
        let p = v.floor_point(Vec2::new(0.5, 0.5)).unwrap();
        assert!((p.z + 1.4 / 20f32.to_radians().tan()).abs() < 1e-3, "{p}");
        assert!(p.y.abs() < 1e-5 && p.x.abs() < 1e-5);
        // The top of the frame looks above the horizon (55° fov, 20° pitch): no floor there.
        assert!(v.floor_point(Vec2::new(0.5, 0.0)).is_none());
        assert!(
            v.frame_uv(Vec3::new(0.0, 1.4, 1.0)).is_none(),
            "behind the camera"
        );
    }

    #[test]
    fn thirds_of_a_frame() {
        let (w, h) = (8u32, 12u32);
        let mut px = vec![0u8; (w * h * 4) as usize];
        for y in 0..h {
            for x in 0..w {
                let i = ((y * w + x) * 4) as usize;
                px[i] = if y < 4 { 255 } else { 0 };
                px[i + 2] = if y >= 8 { 255 } else { 0 };
            }
        }
        let [t, m, b] = thirds_mean(&px, UVec2::new(w, h)).unwrap();
        assert_eq!(t.to_srgba().red, 1.0);
        assert_eq!(m.to_srgba(), Srgba::rgb(0.0, 0.0, 0.0));
        assert_eq!(b.to_srgba().blue, 1.0);
    }
}
