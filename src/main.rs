//! The `interlock` binary: parses the command line and runs it on an actix system.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = interlock::cli::Cli::parse();
    let result = actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| {
                eprintln!("error: cannot start the async runtime: {e}");
                std::process::exit(1)
            })
    })
    .block_on(interlock::cli::main(cli));
    result
}
