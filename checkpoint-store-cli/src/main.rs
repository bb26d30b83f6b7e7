//! The `checkpoint` command: see the crate's README or `checkpoint --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    checkpoint_store_cli::main()
}
