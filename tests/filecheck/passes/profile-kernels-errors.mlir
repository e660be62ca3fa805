// RUN: xweave-opt %s --split-input-file --verify-diagnostics -p profile-kernels | filecheck %s

// Instrumented twice: refused (the counters would be bound twice).

builtin.module {
  "memref.global"() <{sym_name = "xweave_profile", type = memref<1xi64>, initial_value, sym_visibility = "private"}> : () -> ()
  func.func @main() {
    func.return
  }
}

// CHECK: profile-kernels: the module already has a symbol @xweave_profile; it was instrumented before

// -----

builtin.module {
  func.func @k() attributes {xweave.kernel} {
    func.return
  }
}

// CHECK: profile-kernels: the module has no @main function
