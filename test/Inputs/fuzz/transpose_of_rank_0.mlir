// Fixed (test_fuzz.py's FIXED).
// Found by bench/fuzz.py (seed 6, program 58): convert-relay-to-loops raises IndexError in
// loop_builders.transpose (`idx[0]` of an empty index) on a rank-0 transpose.
// targets: c
// default-device: cpu
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = relay.transpose %a : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}
