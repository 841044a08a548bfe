// Fixed (test_fuzz.py's FIXED).
// Found by bench/fuzz.py (seed 6, program 30): convert-relay-to-loops raises
// ZeroDivisionError in loop_builders.delinearize when a reshape reads a size-0 tensor.
// targets: c
// default-device: cpu
func.func @main(%a: tensor<0x3xf32>) -> tensor<3x0xf32> {
  %0 = relay.reshape %a : (tensor<0x3xf32>) -> tensor<3x0xf32>
  func.return %0 : tensor<3x0xf32>
}
