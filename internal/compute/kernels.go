package compute

import _ "embed"

// The PTX is generated from kernels/*.cu by clang, committed, and checked
// for staleness in CI; the driver JIT-compiles it for the card it runs on.
//
//go:generate sh kernels/build.sh

//go:embed kernels/common_sm70.ptx
var ptxCommon string

//go:embed kernels/mma_sm80.ptx
var ptxMMA80 string

//go:embed kernels/mma_sm89.ptx
var ptxMMA89 string
