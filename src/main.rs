use clap::error::ErrorKind;
use clap::Parser;
use tiersim::cli::{self, Cli, Interrupted, RunFailed};

/// A command-line error as one line: clap's first line, with the items a line
/// ending in a colon announces (the missing arguments) joined onto it.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("error: bad command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    match first.strip_suffix(':') {
        Some(head) => {
            let items: Vec<&str> = lines.take_while(|l| !l.starts_with("Usage:")).collect();
            format!("{head}: {}", items.join(", "))
        }
        None => first.to_string(),
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) => {
            e.exit()
        }
        Err(e) => {
            eprintln!("tiersim: {} (see --help)", one_line(&e));
            std::process::exit(2);
        }
    };
    if let Err(e) = cli::main(cli) {
        let text = format!("{e:#}");
        eprintln!("tiersim: {}", text.lines().next().unwrap_or("error"));
        let code = if e.downcast_ref::<Interrupted>().is_some() {
            130
        } else if e.downcast_ref::<RunFailed>().is_some() {
            1
        } else {
            2
        };
        std::process::exit(code);
    }
}
