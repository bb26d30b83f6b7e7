//! The kit's own tests: the reference store passes every case, deliberately broken stores are
//! caught, the history checker finds each kind of violation, and the proxy counts right.

mod broken;
mod checker;
mod in_memory;
mod proxy;
mod teeth;
