//! `eco-insights`: serve the API, generate the sample catalog, or validate an export.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

use eco_insights::config::{Cli, Command, GenerateArgs, ServeArgs, ValidateArgs};
use eco_insights::engine::load::{self, LoadError};
use eco_insights::engine::reload;
use eco_insights::engine::store::Store;
use eco_insights::engine::views::Views;
use eco_insights::sample;

/// mimalloc returns the pages of a replaced snapshot to the OS, so memory stays flat across
/// swaps (glibc's per-thread arenas keep them).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Threads running engine work (Polars plans, row reads). More would only contend for the same
/// cores (Polars parallelises inside a plan) and each keeps allocator caches of its own.
const BLOCKING_THREADS: usize = 4;

/// Purge freed memory at once instead of after a delay: a load's transient buffers (the parsed
/// export, the views' intermediate columns) leave the process as soon as the snapshot is built.
/// `MIMALLOC_PURGE_DELAY` in the environment still wins.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide allocator option before any other thread runs.
        unsafe {
            libmimalloc_sys::mi_option_set(15 /* mi_option_purge_delay */, 0)
        };
    }
}
use eco_insights::http::auth::Credentials;
use eco_insights::http::{AppState, Application};

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Generate(args) => generate_cmd(args),
        Command::Validate(args) => return validate_cmd(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn generate_cmd(args: GenerateArgs) -> anyhow::Result<()> {
    let mut df = sample::generate_catalog(args.rows, args.seed)?;
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    sample::write_parquet(&mut df, &args.out)?;
    println!("wrote {} rows to {}", df.height(), args.out.display());
    Ok(())
}

fn validate_cmd(args: ValidateArgs) -> ExitCode {
    match load::validate_file(&args.file) {
        Ok(rows) => {
            println!("{}: valid ({rows} rows)", args.file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&args.log).context("invalid --log filter")?)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cost = args.cost()?;
    let credentials = Credentials::load(&args.credentials)?;
    if credentials.demo_active() {
        tracing::warn!(
            file = %args.credentials.display(),
            "the public demo credentials (demo-key / demo-secret) are active: replace them before exposing this service"
        );
    }
    let views = Views::read(&args.queries, &cost)?;
    let snapshot = eco_insights::memory::during_load(|| {
        let snapshot = load::load_file(&args.data, &views)?;
        eco_insights::http::warm(&snapshot);
        Ok::<_, LoadError>(snapshot)
    })
    .map_err(|e: LoadError| anyhow::anyhow!("{e}"))?;
    tracing::info!(
        version = %snapshot.info.version,
        rows = snapshot.info.rows,
        bytes = snapshot.estimated_bytes(),
        source = %args.data.display(),
        "dataset loaded"
    );
    let store = Arc::new(Store::new(Some(snapshot)));
    let state = AppState::new(Arc::clone(&store), credentials);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(BLOCKING_THREADS)
        .on_thread_start(eco_insights::priority::register_serving_thread)
        .on_thread_stop(eco_insights::priority::unregister_serving_thread)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let app = Application::bind(&args.bind, state).await?;
        let addr = app.local_addr()?;
        println!("listening on http://{addr}");
        tracing::info!(%addr, "listening");
        let reloader =
            reload::Reloader::new(args.data.clone(), args.queries.clone(), cost, store, eco_insights::http::warm);
        tokio::spawn(reloader.run(std::time::Duration::from_millis(args.reload_interval_ms)));
        app.run_until(shutdown_signal()).await?;
        tracing::info!("stopped");
        anyhow::Ok(())
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
