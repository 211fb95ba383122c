// The emoji example's background: the camera frame, with everything that is not the person
// (selfie segmentation's mask) desaturated and tinted, so the person stands out.
//
// Bindings (Bevy Material2d, group MATERIAL_BIND_GROUP):
//   0: params (x = effect strength in [0, 1], y = 1 when a mask exists, z = extra fragment
//      work iterations, used only to raise the scene's GPU cost in load experiments)
//   1, 2: camera frame texture and sampler (frame uv = mesh uv)
//   3, 4: person mask texture (R8, 1 = person) and sampler, same uv
#import bevy_sprite::mesh2d_vertex_output::VertexOutput

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
    let mask = select(1.0, textureSample(mask_texture, mask_sampler, uv).r, material.params.y > 0.5);
    let luma = dot(color, vec3<f32>(0.299, 0.587, 0.114));
    let background = mix(vec3<f32>(luma), vec3<f32>(0.15, 0.25, 0.55), 0.35) * 0.8;
    let strength = clamp(material.params.x, 0.0, 1.0);
    let outside = mix(color, background, strength);
    return vec4<f32>(mix(outside, color, mask), 1.0);
}
