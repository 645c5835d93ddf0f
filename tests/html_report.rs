//! The HTML report in a real browser: `tiersim report` on a run's and on a
//! Thermostat run's JSON, and `report::html::sweep_page` on the reports of a small
//! sweep. Every page must name nothing on the network, and headless Chromium must draw
//! every plot: inside each plot's box a good share of the pixels are not the white
//! background, and every series colour the plot says it drew appears in its plotting
//! area.
//!
//! The page's one script writes each plot's box, plotting area and series colours
//! into `#plot-boxes`; Chromium's `--dump-dom` reads them, and its `--screenshot` at
//! the same window size gives the pixels. Without Chromium (Debian's `chromium`,
//! which `.ci/run` installs) the browser checks fail, unless `TIERSIM_SKIP_BROWSER=1`
//! skips them.

mod common;

use common::{tiersim, Scratch};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::report::html::{sweep_page, SweepRun};

const SUITE: &str = "html";
/// The browser window: two plots side by side, and tall enough for every plot of the
/// pages tested.
const WINDOW_WIDTH_PX: usize = 1200;
const WINDOW_HEIGHT_PX: usize = 3000;

/// A plot must have at least this share of its box drawn (not white): axes, labels,
/// grid and data together.
const INKED_SHARE_MIN: f64 = 0.03;

/// A series colour must cover at least this many pixels of the plotting area.
const COLOUR_PIXELS_MIN: usize = 20;

/// Whether the browser checks run: Chromium is installed; without it the test fails
/// unless `TIERSIM_SKIP_BROWSER=1`.
fn browser() -> bool {
    if Command::new("chromium").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    if std::env::var("TIERSIM_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("chromium not found: the browser checks of the HTML report are skipped (TIERSIM_SKIP_BROWSER=1)");
        return false;
    }
    panic!(
        "chromium not found: the HTML report is checked in headless Chromium; install it (apt-get install chromium, as .ci/run does) or set TIERSIM_SKIP_BROWSER=1 to skip these checks"
    );
}

/// Headless Chromium on the page at `path` in the test's window, doing `action`
/// (`--dump-dom` or `--screenshot=FILE`) with its own profile directory.
fn chromium(path: &str, action: &str, profile: &str) -> Command {
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"])
        .arg(format!("--user-data-dir={profile}"))
        .arg(format!("--window-size={WINDOW_WIDTH_PX},{WINDOW_HEIGHT_PX}"))
        .arg(action)
        .arg(format!("file://{path}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for a Chromium started by [`chromium`]; returns what it printed.
fn finish(child: Child, what: &str) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "chromium {what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the page's script wrote into `#plot-boxes`: every plot's box, plotting area,
/// series colours and title.
fn plot_boxes(dom: &str) -> Value {
    let start = dom.find("<pre id=\"plot-boxes\"").expect("the page has #plot-boxes");
    let text = &dom[start..];
    let text = &text[text.find('>').unwrap() + 1..text.find("</pre>").unwrap()];
    assert!(!text.is_empty(), "the page's script wrote nothing");
    serde_json::from_str(&text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")).unwrap()
}

/// A decoded screenshot, 8-bit RGB.
struct Screenshot {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Screenshot {
    fn load(path: &str) -> Screenshot {
        let mut reader = png::Decoder::new(std::fs::File::open(path).unwrap()).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.bit_depth, png::BitDepth::Eight, "{path}");
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => panic!("{path}: colour type {other:?}"),
        };
        let rgb = buf[..info.buffer_size()].chunks(channels).flat_map(|p| [p[0], p[1], p[2]]).collect();
        Screenshot { width: info.width as usize, height: info.height as usize, rgb }
    }

    /// The pixels of the box [x0, x1) × [y0, y1), clipped to the image.
    fn pixels(&self, x0: usize, y0: usize, x1: usize, y1: usize) -> impl Iterator<Item = [u8; 3]> + '_ {
        let (x1, y1) = (x1.min(self.width), y1.min(self.height));
        (y0..y1).flat_map(move |y| (x0..x1).map(move |x| {
            let i = 3 * (y * self.width + x);
            [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
        }))
    }
}

/// `#rrggbb` as bytes.
fn rgb(hex: &str) -> [u8; 3] {
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
    [byte(1), byte(3), byte(5)]
}

/// Checks that the page names nothing on the network: no URL, no linked style sheet,
/// script or image.
fn assert_self_contained(page: &str, name: &str) {
    for needle in ["http://", "https://", "<link", "src=", "@import", "url("] {
        assert!(!page.contains(needle), "{name}: the page contains `{needle}`");
    }
}

/// Shows the page at `html` (its text `page`) in headless Chromium and checks that
/// every plot is drawn: a good share of its box not white, and each series colour it
/// lists in its plotting area (a plot may list none only when its caption says every
/// bar is 0). Returns the plots' titles (none when the browser checks are skipped).
fn check_drawn(html: &str, page: &str, name: &str) -> Vec<String> {
    if !browser() {
        return Vec::new();
    }
    let dir = Scratch::new(SUITE);
    let profile = |i: u32| dir.file(&format!("{name}-profile-{i}"));
    // The layout and the screenshot in windows of the same size, side by side.
    let png = dir.file(&format!("{name}.png"));
    let layout = chromium(html, "--dump-dom", &profile(0)).spawn().unwrap();
    let screenshot = chromium(html, &format!("--screenshot={png}"), &profile(1)).spawn().unwrap();
    let boxes = plot_boxes(&finish(layout, "--dump-dom"));
    finish(screenshot, "--screenshot");
    let shot = Screenshot::load(&png);
    assert_eq!((shot.width, shot.height), (WINDOW_WIDTH_PX, WINDOW_HEIGHT_PX), "{name}: the screenshot is the window");
    let plots = boxes["plots"].as_array().unwrap();
    assert!(!plots.is_empty(), "{name}: no plot on the page");
    let mut titles = Vec::new();
    for p in plots {
        let title = p["title"].as_str().unwrap();
        let f = |v: &Value| v.as_f64().unwrap().round() as usize;
        let (x, y, w, h) = (f(&p["x"]), f(&p["y"]), f(&p["w"]), f(&p["h"]));
        assert!(w > 100 && h > 100 && x + w <= shot.width, "{name}: {title} is laid out at {x},{y} size {w}×{h}");
        assert!(y + h <= shot.height, "{name}: {title} ends at {} px, below the window: make WINDOW_HEIGHT_PX taller", y + h);
        let inked = shot.pixels(x, y, x + w, y + h).filter(|px| px.iter().any(|c| *c < 230)).count();
        let share = inked as f64 / (w * h) as f64;
        assert!(share >= INKED_SHARE_MIN, "{name}: {title}: only {:.1} % of its pixels are drawn", share * 100.0);
        let area: Vec<usize> = p["area"].as_array().unwrap().iter().map(f).collect();
        let colours = p["colours"].as_array().unwrap();
        if colours.is_empty() {
            let figure = &page[page.find(&format!("data-title=\"{title}\"")).unwrap()..];
            assert!(figure[..figure.find("</figure>").unwrap()].contains("Every bar is 0."), "{name}: {title} drew no series");
        }
        for c in colours {
            let want = rgb(c.as_str().unwrap());
            let close = |px: &[u8; 3]| px.iter().zip(want).all(|(a, b)| a.abs_diff(b) <= 24);
            let n = shot.pixels(area[0], area[1], area[2], area[3]).filter(close).count();
            assert!(n >= COLOUR_PIXELS_MIN, "{name}: {title}: its series colour {c} covers {n} pixels of the plotting area");
        }
        titles.push(title.to_string());
    }
    titles
}

/// Runs `tiersim run ARGS --json`, then `tiersim report` on it, in `dir`; returns the
/// page's path and text.
fn report_of_run(dir: &Scratch, name: &str, args: &[&str]) -> (String, String) {
    let (json, html) = (dir.file(&format!("{name}.json")), dir.file(&format!("{name}.html")));
    let mut all = vec!["run"];
    all.extend(args);
    all.extend(["--json", &json]);
    let out = tiersim(&all);
    assert!(out.status.success(), "tiersim {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    let out = tiersim(&["report", &json, "-o", &html]);
    assert!(out.status.success(), "tiersim report: {}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    (html, page)
}

const EPOCH_PANELS: [&str; 5] = ["Fast-tier share", "Page moves per epoch", "Instructions per cycle", "Bandwidth per tier", "Average memory access time per tier"];

#[test]
fn a_runs_page_draws_every_epoch_series_in_a_browser() {
    let args = ["--policy", "tpp", "--workload", "kv", "--footprint", "64MiB", "--refs", "2000000", "--set", "engine.epoch_cycles=2000000"];
    let dir = Scratch::new(SUITE);
    let (html, page) = report_of_run(&dir, "tpp", &args);
    assert_self_contained(&page, "tpp");
    assert!(page.contains("<title>tiersim run: tpp on kv</title>"));
    for title in EPOCH_PANELS {
        assert!(page.contains(&format!("data-title=\"{title}\"")), "no panel {title}");
    }
    let drawn = check_drawn(&html, &page, "tpp");
    assert!(drawn.is_empty() || EPOCH_PANELS.iter().all(|t| drawn.iter().any(|d| d == t)), "drawn: {drawn:?}");
}

#[test]
fn thermostats_page_draws_its_slow_access_rate_against_the_target() {
    let args = [
        "--preset",
        "thermostat-emulated",
        "--workload",
        "kv",
        "--footprint",
        "64MiB",
        "--refs",
        "4000000",
        "--set",
        "policy.thermostat.periods_per_run=10",
        "--set",
        "engine.epoch_cycles=5000000",
    ];
    let dir = Scratch::new(SUITE);
    let (html, page) = report_of_run(&dir, "thermostat", &args);
    assert_self_contained(&page, "thermostat");
    let wanted = ["Thermostat: slow-memory access rate against its target", "periods: bytes (MiB)", "periods: count"];
    for title in wanted {
        assert!(page.contains(&format!("data-title=\"{title}\"")), "no panel {title}");
    }
    let drawn = check_drawn(&html, &page, "thermostat");
    assert!(drawn.is_empty() || wanted.iter().all(|t| drawn.iter().any(|d| d == t)), "drawn: {drawn:?}");
}

/// The JSON report of a short run of `policy` on kv with the fast tier `capacity` of
/// the footprint.
fn short_run(policy: &str, capacity: &str, seed: u64) -> Value {
    let sets = [
        format!("policy.name=\"{policy}\""),
        "workload.name=\"kv\"".into(),
        "workload.footprint=\"32MiB\"".into(),
        "workload.refs=1000000".into(),
        format!("workload.seed={seed}"),
        format!("machine.tiers.fast.capacity=\"{capacity}\""),
    ];
    let cfg = Config::load(&Sources { sets: sets.to_vec(), ..Default::default() }).unwrap();
    serde_json::to_value(run(&cfg, &RunOptions::default()).unwrap()).unwrap()
}

#[test]
fn a_sweeps_page_draws_normalised_bars_in_a_browser() {
    let mut runs = Vec::new();
    for policy in ["first-touch", "tpp", "all-fast"] {
        for capacity in ["25%", "50%"] {
            for seed in [1, 2] {
                let axes = [("policy", policy.to_string()), ("machine.tiers.fast.capacity", capacity.to_string()), ("seed", seed.to_string())];
                let axes = axes.iter().map(|(a, v)| (a.to_string(), v.clone())).collect();
                let failed = policy == "tpp" && capacity == "50%" && seed == 2;
                let (error, report) = if failed { (Some("memory exhausted (a failure made up by the test)".to_string()), None) } else { (None, Some(short_run(policy, capacity, seed))) };
                runs.push(SweepRun { axes, error, report });
            }
        }
    }
    let page = sweep_page("a small sweep", "policies = [\"first-touch\", \"tpp\", \"all-fast\"]\n", &runs, None).unwrap();
    assert_self_contained(&page, "sweep");
    assert_eq!(page.matches("<figure class=\"plot\"").count(), 10, "one panel per summary figure");
    assert!(page.contains("<td>memory exhausted (a failure made up by the test)</td>"), "the failed run is listed with its error");
    assert!(page.contains("Seeds: each bar averages the runs of every seed"));
    assert!(page.contains("Bars are relative to the run of first-touch with the same machine.tiers.fast.capacity, seed"));
    let dir = Scratch::new(SUITE);
    let html = dir.file("sweep.html");
    std::fs::write(&html, &page).unwrap();
    let drawn = check_drawn(&html, &page, "sweep");
    assert!(drawn.is_empty() || drawn.len() == 10, "drawn: {drawn:?}");
}

#[test]
fn compares_json_becomes_one_page_with_every_runs_series() {
    let dir = Scratch::new(SUITE);
    let (json, html) = (dir.file("compare.json"), dir.file("compare.html"));
    let args = ["compare", "--policies", "first-touch,tpp", "--workload", "kv", "--footprint", "32MiB", "--refs", "300000", "--json", &json];
    let out = tiersim(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = tiersim(&["report", &json, "-o", &html]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert_self_contained(&page, "compare");
    assert!(page.contains("<h2>Run 1: first-touch</h2>") && page.contains("<h2>Run 2: tpp</h2>"));
    // first-touch never moves a page: a sentence stands for its page-moves panel.
    let still = page.matches("<p>No plot of page moves per epoch: ").count();
    assert!(page.contains("<p>No plot of page moves per epoch: policy first-touch moved no page in any epoch.</p>"), "{page}");
    assert_eq!(page.matches("<figure class=\"plot\"").count(), 10 + 2 * EPOCH_PANELS.len() - still, "the sweep's panels, then each run's");
}

#[test]
fn bad_inputs_get_one_line_naming_the_file_and_exit_code_2() {
    let dir = Scratch::new(SUITE);
    let (text, not_report, empty, db) = (dir.file("text.json"), dir.file("other.json"), dir.file("empty.json"), dir.file("sweep.db"));
    std::fs::write(&text, "not json").unwrap();
    std::fs::write(&not_report, "{\"summary\": {}}").unwrap();
    std::fs::write(&empty, "[]").unwrap();
    std::fs::write(&db, "").unwrap();
    let missing = dir.file("missing.json");
    let out = dir.file("bad.html");
    // A trace given by mistake: its format, native (binary) or text, not a UTF-8 error.
    let (native, lackey) = (dir.file("t.tsim"), dir.file("t.lk"));
    std::fs::write(&lackey, "I  00400000,3\n L 00601000,8\n").unwrap();
    assert!(tiersim(&["convert", &lackey, &native]).status.success());
    let expects = "not a report; `tiersim report` reads a run's JSON report (`run --json`), the array `compare --json` writes, or a sweep store (.db)";
    let (is_native, is_lackey) = (format!("is a tiersim native trace, {expects}"), format!("is a lackey text trace, {expects}"));
    let cases = [
        (&missing, "cannot read: No such file or directory"),
        (&native, is_native.as_str()),
        (&lackey, is_lackey.as_str()),
        (&text, "not JSON: expected ident at line 1 column 2"),
        (&not_report, "not a tiersim run report (no `epochs` array)"),
        (&empty, "an empty array, no report in it"),
        (&db, "an empty database, not a tiersim sweep store"),
    ];
    for (input, why) in cases {
        let o = tiersim(&["report", input, "-o", &out]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{input}: {stderr}");
        assert_eq!(stderr, format!("tiersim: {input}: {why}\n"));
        assert!(!std::path::Path::new(&out).exists(), "no page written");
    }
}
