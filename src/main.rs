use clap::Parser;
use tiersim::cli::{self, Cli, RunFailed};

fn main() {
    let cli = Cli::parse();
    if let Err(e) = cli::main(cli) {
        let text = format!("{e:#}");
        eprintln!("tiersim: {}", text.lines().next().unwrap_or("error"));
        let code = if e.downcast_ref::<RunFailed>().is_some() { 1 } else { 2 };
        std::process::exit(code);
    }
}
