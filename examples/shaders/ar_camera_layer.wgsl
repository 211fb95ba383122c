// The camera picture in the 3D apps' AR view (examples/support/ar_view.rs), on a quad in front
// of the 3D camera: as the opaque background behind the scene, or as the person in front of it
// (alpha = selfie segmentation's mask), so a person occludes the virtual furniture.
//
// Bindings (Bevy Material, group MATERIAL_BIND_GROUP):
//   0: params (x = 1 for the person layer (alpha from the mask), y = 1 when a mask exists,
//      z = extra fragment work iterations, used only to raise the scene's GPU cost in load
//      experiments)
//   1, 2: camera frame texture and sampler (frame uv = mesh uv)
//   3, 4: person mask texture (R8, 1 = person) and sampler, same uv
#import bevy_pbr::forward_io::VertexOutput

struct Params {
    params: vec4<f32>,
};

@group(#{MATERIAL_BIND_GROUP}) @binding(0) var<uniform> material: Params;
@group(#{MATERIAL_BIND_GROUP}) @binding(1) var camera_texture: texture_2d<f32>;
@group(#{MATERIAL_BIND_GROUP}) @binding(2) var camera_sampler: sampler;
@group(#{MATERIAL_BIND_GROUP}) @binding(3) var mask_texture: texture_2d<f32>;
@group(#{MATERIAL_BIND_GROUP}) @binding(4) var mask_sampler: sampler;

@fragment
fn fragment(mesh: VertexOutput) -> @location(0) vec4<f32> {
    let uv = mesh.uv;
    var color = textureSample(camera_texture, camera_sampler, uv).rgb;
    // Optional synthetic load: a dependent chain that the compiler cannot drop.
    let iterations = u32(material.params.z);
    var acc = color;
    for (var i = 0u; i < iterations; i = i + 1u) {
        acc = fract(acc * 1.0001 + vec3<f32>(0.1234, 0.3456, 0.5678));
    }
    color = color + acc * 1e-6;
    var alpha = 1.0;
    if material.params.x > 0.5 {
        // The person layer: only where the mask says person (soft edge from the mask itself).
        let mask = textureSample(mask_texture, mask_sampler, uv).r;
        alpha = select(0.0, smoothstep(0.3, 0.7, mask), material.params.y > 0.5);
    }
    return vec4<f32>(color, alpha);
}
