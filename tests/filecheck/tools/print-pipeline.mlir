// RUN: xweave-opt --print-pipeline -p 'graph-fuse,dce,plan-memory{alignment=32},schedule-kernels' | filecheck %s
// RUN: xweave-opt --print-pipeline -p 'graph-fuse{max_depth=256},plan-memory{function="main" alignment=32},schedule-kernels{tuning_records any_target=false}' | filecheck %s --check-prefix=AGAIN

// --print-pipeline prints the pipeline -p resolves to, with every option of every pass
// spelled out (defaults included), in the syntax -p takes back (second RUN line: the
// printed pipeline resolves to itself), and exits.

// CHECK: graph-fuse{max_depth=256},dce,plan-memory{function="main" alignment=32},schedule-kernels{tuning_records any_target=false}
// AGAIN: graph-fuse{max_depth=256},plan-memory{function="main" alignment=32},schedule-kernels{tuning_records any_target=false}
