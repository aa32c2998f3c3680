//! `eco-insights`: serve the API, generate the sample catalog, or validate an export.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use eco_insights::config::{Cli, Command, CredentialsCommand, GenerateArgs, ReportArgs, ServeArgs, ValidateArgs};
use eco_insights::engine::load;
use eco_insights::engine::reload;
use eco_insights::engine::remote;
use eco_insights::engine::state::StateDir;
use eco_insights::engine::store::{ReloadResult, Store};
use eco_insights::engine::views::Views;
use eco_insights::process::credentials;
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
/// `MIMALLOC_PURGE_DELAY` in the environment still wins. Also runs the process on base pages
/// (see [`eco_insights::process::memory::without_transparent_huge_pages`]) unless `MIMALLOC_ALLOW_THP`
/// says otherwise.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide allocator option before any other thread runs.
        unsafe {
            libmimalloc_sys::mi_option_set(15 /* mi_option_purge_delay */, 0)
        };
    }
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        eco_insights::process::memory::without_transparent_huge_pages();
    }
}
use eco_insights::http::{AppState, Prepared};
use eco_insights::process::keys::Credentials;
use eco_insights::process::keys_reload::{CredentialsReloader, FileStamp};

/// Whether analysts' SQL can read `views` (see [`reload::ViewsCheck`]).
fn sql_reads_views(views: &Views) -> Result<(), String> {
    eco_insights::engine::sql::tables::check_views(&eco_insights::engine::sql::tables::Statements::of(views))
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::SqlWorker => return ExitCode::from(eco_insights::engine::sql::worker::run_worker() as u8),
        Command::SqlTables { dir, tables } => {
            return match eco_insights::engine::sql::mapped::write_ahead(&dir, &tables) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Generate(args) => generate_cmd(args),
        Command::Validate(args) => return validate_cmd(args),
        Command::Credentials(command) => credentials_cmd(command),
        Command::Report(args) => return report_cmd(args),
        Command::Diff(args) => return eco_insights::diff::run(&args),
        Command::Import(eco_insights::config::ImportCommand::Pbev(args)) => return eco_insights::import::run(&args),
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
    if let Some(queries) = &args.queries {
        let views = match Views::read(queries, &eco_insights::engine::views::CostConfig::default()) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::FAILURE;
            }
        };
        // The views run on both engines: Polars for the API, DataFusion for analysts' SQL.
        let statements = eco_insights::engine::sql::tables::Statements::of(&views);
        if let Err(e) = eco_insights::engine::sql::tables::check_views(&statements) {
            eprintln!("error: {}: the views cannot be read in analysts' SQL: {e}", queries.display());
            return ExitCode::FAILURE;
        }
        return match load::load_file_limited(&args.file, &views, args.input_limits()) {
            Ok(s) => {
                println!(
                    "{}: valid ({} rows; the views of {} computed, dataset version {})",
                    args.file.display(),
                    s.info.rows,
                    queries.display(),
                    s.info.version
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    match load::validate_file_limited(&args.file, args.input_limits()) {
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

fn report_cmd(args: ReportArgs) -> ExitCode {
    match eco_insights::report::run(&args.data, &args.queries, &args.out, args.input_limits()) {
        Ok(w) => {
            println!(
                "wrote {} ({} rows, dataset version {}) in {:.2} s",
                w.out.display(),
                w.rows,
                w.version,
                w.elapsed.as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e @ eco_insights::report::ReportError::Input(_)) => {
            // The validator's own message, as `eco-insights validate` prints it.
            eprintln!("{e}");
            ExitCode::from(e.exit_status())
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(e.exit_status())
        }
    }
}

fn credentials_cmd(command: CredentialsCommand) -> anyhow::Result<()> {
    match command {
        CredentialsCommand::Add(a) => {
            let created = credentials::add(&a.file.file, &a.name, a.quota_per_minute)?;
            println!("{}", serde_json::to_string(&created)?);
        }
        CredentialsCommand::List(f) => println!("{}", serde_json::to_string_pretty(&credentials::list(&f.file)?)?),
        CredentialsCommand::Scram(s) => {
            let mut secret = String::new();
            std::io::stdin().read_line(&mut secret)?;
            let secret = secret.strip_suffix('\n').unwrap_or(&secret);
            let secret = secret.strip_suffix('\r').unwrap_or(secret);
            credentials::set_scram(&s.file.file, &s.key, secret)?;
            eprintln!("SCRAM verifier written for {}", s.key);
        }
        CredentialsCommand::Revoke(r) => {
            credentials::revoke(&r.file.file, &r.key)?;
            eprintln!("revoked {}", r.key);
        }
    }
    Ok(())
}

/// Whether every address `bind` resolves to is a loopback address.
fn bind_is_loopback(bind: &str) -> bool {
    use std::net::ToSocketAddrs;
    match bind.to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<_> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// The PostgreSQL door's TLS, when `--pg-bind` is given: its certificate and key read (`None`
/// without them); an error when only one is given, a file is unusable, or the door would listen
/// in clear text beyond loopback without `--pg-allow-plaintext`.
fn pg_tls(args: &ServeArgs) -> anyhow::Result<Option<Arc<eco_insights::pg::tls::Tls>>> {
    let door = Door { flag: "pg", name: "PostgreSQL", crossing: "queries and answers" };
    let files = door.tls_files(args.pg_bind.as_deref(), args.pg_tls_files()?, args.pg_allow_plaintext)?;
    files.map(|(cert, key)| eco_insights::pg::tls::Tls::load(cert, key).map(Arc::new)).transpose()
}

/// The Flight SQL door's TLS, when `--flight-bind` is given: its certificate and key checked
/// (`None` without them); an error when only one is given, a file is unusable, or the door would
/// listen in clear text beyond loopback without `--flight-allow-plaintext`.
fn flight_tls(args: &ServeArgs) -> anyhow::Result<Option<eco_insights::flight::Tls>> {
    let door = Door { flag: "flight", name: "Flight SQL", crossing: "secrets, tokens, queries and answers" };
    let files = door.tls_files(args.flight_bind.as_deref(), args.flight_tls_files()?, args.flight_allow_plaintext)?;
    files.map(|(cert, key)| eco_insights::flight::Tls::load(cert, key)).transpose()
}

/// A second front door (`--pg-bind`, `--flight-bind`) as its TLS checks name it.
struct Door {
    /// The flags' stem: `--{flag}-bind`, `--{flag}-tls-cert`...
    flag: &'static str,
    name: &'static str,
    /// What would cross the network in clear text.
    crossing: &'static str,
}

impl Door {
    /// The door's certificate and key when it listens and has them; `None` without them, after
    /// refusing a clear-text door beyond loopback unless `allow_plaintext` (then warning).
    fn tls_files<'a>(
        &self,
        bind: Option<&str>,
        files: Option<(&'a std::path::Path, &'a std::path::Path)>,
        allow_plaintext: bool,
    ) -> anyhow::Result<Option<(&'a std::path::Path, &'a std::path::Path)>> {
        let Door { flag, name, crossing } = self;
        let env = flag.to_uppercase();
        let Some(bind) = bind else {
            if files.is_some() {
                tracing::warn!("--{flag}-tls-cert and --{flag}-tls-key are ignored without --{flag}-bind");
            }
            return Ok(None);
        };
        if files.is_none() && !bind_is_loopback(bind) {
            if !allow_plaintext {
                anyhow::bail!(
                    "--{flag}-bind {bind} is not a loopback address and the {name} door has no TLS: {crossing} \
                     would cross the network in clear text. Give --{flag}-tls-cert and --{flag}-tls-key \
                     (ECO_{env}_TLS_CERT, ECO_{env}_TLS_KEY), bind 127.0.0.1, or pass --{flag}-allow-plaintext \
                     (ECO_{env}_ALLOW_PLAINTEXT=true)"
                );
            }
            tracing::warn!(
                addr = %bind,
                "the {name} door serves beyond loopback without TLS (--{flag}-allow-plaintext): {crossing} cross \
                 the network in clear text"
            );
        }
        Ok(files)
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Dropped last: writes out the log lines still queued.
    let log_guard = eco_insights::process::logging::init(&args.log, args.log_format)?;
    let pg_tls = pg_tls(&args)?;
    let flight_tls = flight_tls(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(BLOCKING_THREADS)
        .on_thread_start(eco_insights::process::priority::register_serving_thread)
        .on_thread_stop(eco_insights::process::priority::unregister_serving_thread)
        .enable_all()
        .build()?;
    // SIGHUP's default action ends the process: take it over before the (possibly long) first
    // load. A handler registered with tokio stays installed for the life of the process; the
    // reloaders listen to it once they run.
    #[cfg(unix)]
    {
        let _guard = runtime.enter();
        drop(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?);
    }
    let cost = args.cost()?;
    let credentials_seen = FileStamp::now(&args.credentials);
    let credentials = Credentials::load(&args.credentials)?;
    // The demo pair opens the PostgreSQL door as much as the HTTP one.
    let public_bind = [Some(&args.bind), args.pg_bind.as_ref(), args.flight_bind.as_ref()]
        .into_iter()
        .flatten()
        .find(|b| !bind_is_loopback(b));
    let demo_allowed = args.allow_demo_credentials || public_bind.is_none();
    if credentials.demo_active() {
        if let (false, Some(public_bind)) = (demo_allowed, public_bind) {
            anyhow::bail!(
                "the public demo credentials (demo-key / demo-secret) are active in {} and {} is not a \
                 loopback address: replace them (`eco-insights credentials add`, then revoke demo-key), bind \
                 127.0.0.1, or pass --allow-demo-credentials (ECO_ALLOW_DEMO_CREDENTIALS=true)",
                args.credentials.display(),
                if public_bind == &args.bind {
                    format!("--bind {public_bind}")
                } else if Some(public_bind) == args.pg_bind.as_ref() {
                    format!("--pg-bind {public_bind}")
                } else {
                    format!("--flight-bind {public_bind}")
                }
            );
        }
        tracing::warn!(
            file = %args.credentials.display(),
            "the public demo credentials (demo-key / demo-secret) are active: replace them before exposing this service"
        );
    }
    let views = Views::read(&args.queries, &cost)?;
    // The views run on both engines: a view analysts' SQL cannot read is said in the log (on a
    // thread of its own, beside the first load; the API serves it anyway), here and on reloads.
    let (checked, folder) = (views.clone(), args.queries.clone());
    let _ = std::thread::Builder::new()
        .name("eco-views-check".into())
        .spawn(move || reload::say_if_sql_cannot_read(sql_reads_views, &checked, &folder));
    let store = Arc::new(Store::new(None));
    // A remote export (s3:// or https://) is mirrored to a local file, which is then watched and
    // validated like a local export; the first poll happens before the first load.
    let data_arg = args.data.to_string_lossy().into_owned();
    let mirror = remote::is_remote(&data_arg).then(remote::mirror_folder);
    let mut remote = match &mirror {
        Some(folder) => Some(remote::Remote::open(&data_arg, folder, args.max_data_bytes)?),
        None => None,
    };
    let data = remote.as_ref().map(|r| r.mirror().to_path_buf()).unwrap_or_else(|| args.data.clone());
    let first_poll = remote.as_mut().map(|r| {
        tracing::info!(source = %data_arg, "asking the remote source for the export");
        runtime.block_on(r.poll_recorded(&store))
    });
    // Watches the file from before it is first read: an export replaced while the service
    // starts is picked up by the first poll.
    let reloader =
        reload::Reloader::new(data.clone(), args.queries.clone(), cost, Arc::clone(&store), eco_insights::http::warm)
            .with_limits(args.input_limits())
            .with_state(args.state_dir.clone().map(StateDir::new))
            .with_views_check(sql_reads_views);
    let kept = args.state_dir.clone().map(StateDir::new);
    let keys = Arc::new(eco_insights::process::keys::KeyStore::new(credentials));
    let sql = Arc::new(eco_insights::engine::sql::worker::Runner::new(args.sql_limits()));
    // Every export a load reads is kept for analysts' SQL (which reads it where it lies); a first
    // load's, once kept, readies a query worker while the load goes on.
    eco_insights::engine::dataset::load::keep_exports_in(
        sql.exports_dir(),
        eco_insights::engine::sql::tables::write_export_copy,
        {
            let (sql, views) = (Arc::clone(&sql), views.clone());
            Box::new(move |version| sql.warm_early(version, &views))
        },
    );
    let state = AppState::sharing(Arc::clone(&store), Arc::clone(&keys), Arc::clone(&sql));
    let pg = eco_insights::pg::PgState {
        store: Arc::clone(&store),
        keys: Arc::clone(&keys),
        sql: Arc::clone(&sql),
        max_connections: args.pg_max_connections,
        startup_timeout: std::time::Duration::from_millis(args.header_timeout_ms),
        tls: pg_tls,
    };
    let flight = eco_insights::flight::FlightState {
        store: Arc::clone(&store),
        keys: Arc::clone(&keys),
        sql: Arc::clone(&sql),
        tls: flight_tls,
    };
    // The ports are bound before the first load: a port in use is said at once, and analysts'
    // SQL is answered as soon as the load has accepted the export, while it still builds the
    // API's table (the API answers 503 until then). "listening" is printed once the API serves.
    let doors = runtime.block_on(Doors::open(&args, state.clone(), pg, flight))?;
    tracing::info!(file = %data.display(), "loading dataset");
    // Once the first load has accepted the export, analysts' SQL reads it (where a worker can).
    let accepted = {
        let (store, sql) = (Arc::clone(&store), Arc::clone(&sql));
        move |info: &eco_insights::engine::snapshot::DatasetInfo| {
            if sql.can_read(&info.version) {
                store.accept(info.clone());
                tracing::info!(
                    version = %info.version,
                    "export accepted: analysts' SQL answers while the API's table is built"
                );
            }
        }
    };
    let loaded = match first_poll {
        Some(Err(why)) => Err(format!("the remote source cannot be read: {}", remote::mask_urls(&why))),
        _ => eco_insights::process::memory::during_load(|| {
            reload::load_export(&data, &views, args.input_limits(), kept.as_ref(), None, Some(&accepted))
        })
        .map_err(|e| reload::public_reason(&data, &e.to_string())),
    };
    match loaded {
        Ok(Some(snapshot)) => {
            tracing::info!(
                version = %snapshot.info.version,
                rows = snapshot.info.rows,
                bytes = snapshot.estimated_bytes(),
                source = %data_arg,
                "dataset loaded"
            );
            store.replace(snapshot);
            store.record_reload(ReloadResult::Ok);
            // The dataset-only answers are computed while the service starts listening: nothing
            // is serving yet to be slowed down, and a request that needs one waits for it.
            if let Some(current) = store.current() {
                let warming = std::thread::Builder::new()
                    .name("eco-warm".into())
                    .spawn(move || eco_insights::http::warm(&current));
                if let Err(e) = warming {
                    tracing::warn!("cannot start the thread computing the dataset-only answers: {e}");
                }
            }
        }
        Ok(None) => tracing::warn!("the first load found the dataset already serving"),
        Err(e) => {
            store.record_reload(ReloadResult::Refused(e.clone()));
            store.forget_accepted();
            sql.abandon_early();
            match kept
                .as_ref()
                .map(|state| (state, eco_insights::process::memory::during_load(|| start_from_state(state, &args))))
            {
                Some((state, Some(snapshot))) => {
                    tracing::error!(
                        source = %data_arg,
                        "the export is refused; serving the dataset kept in {} (version {}, accepted from {}) until a valid export appears: {e}",
                        state.path().display(),
                        snapshot.info.version,
                        snapshot.info.source.display()
                    );
                    store.replace(snapshot);
                }
                _ => {
                    // Serve anyway: the API answers 503 and /readyz says why until a valid export appears.
                    tracing::error!(
                        source = %data_arg,
                        "no dataset loaded; the API answers 503 until a valid export appears: {e}"
                    );
                }
            }
        }
    }
    prepare_sql_tables(Arc::clone(&store), Arc::clone(&sql));
    let grace = Duration::from_millis(args.shutdown_grace_ms);
    let log = &log_guard;

    let result = runtime.block_on(async move {
        let Doors { http: addr, pg: pg_door, flight: flight_door, serving, stop } = doors;
        // The start-up's log lines (why no dataset serves, say) are written before the line a
        // supervisor or a test waits for.
        log.flush();
        println!("listening on http://{addr}");
        tracing::info!(%addr, "listening");
        if let Some((pg_addr, tls)) = pg_door {
            println!("postgres listening on {pg_addr}");
            tracing::info!(addr = %pg_addr, tls, "PostgreSQL protocol listening");
        }
        if let Some((flight_addr, tls)) = flight_door {
            println!("flight listening on {flight_addr}");
            tracing::info!(addr = %flight_addr, tls, "Arrow Flight SQL listening");
        }
        let interval = Duration::from_millis(args.reload_interval_ms);
        match remote {
            Some(remote) => {
                // The mirror is a local file: checking it often costs a stat.
                tokio::spawn(reloader.run(interval.min(Duration::from_millis(200))));
                tokio::spawn(remote.run(Duration::from_millis(args.poll_interval_ms), Arc::clone(&store)));
            }
            None => drop(tokio::spawn(reloader.run(interval))),
        }
        tokio::spawn(
            CredentialsReloader::new(
                args.credentials.clone(),
                credentials_seen,
                Arc::clone(state.keys()),
                demo_allowed,
            )
            .run(interval),
        );
        let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!(
                grace_ms = grace.as_millis() as u64,
                "shutting down: no new connections, finishing requests in flight"
            );
            let _ = stop.send(());
            let _ = stopping.send(());
        });
        tokio::pin!(serving);
        let grace_over = async move {
            match stopped.await {
                Ok(()) => tokio::time::sleep(grace).await,
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            r = &mut serving => r.map_err(|e| anyhow::anyhow!("the HTTP server stopped: {e}"))??,
            _ = grace_over => tracing::warn!("shutdown grace elapsed; closing the requests still in flight"),
        }
        tracing::info!("stopped");
        anyhow::Ok(())
    });
    // Requests cut at the end of the grace may leave engine work running: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    // This process's scratch folders go with it (the exports the SQL tables read); those of a
    // process that could not stop cleanly are removed by the next start.
    sql.remove_scratch();
    if let Some(folder) = mirror {
        let _ = std::fs::remove_dir_all(folder);
    }
    result
}

/// The service's listeners, bound before the first load (see [`Doors::open`]).
struct Doors {
    /// The HTTP address.
    http: std::net::SocketAddr,
    /// The PostgreSQL door's address and whether it speaks TLS, when it is open.
    pg: Option<(std::net::SocketAddr, bool)>,
    /// The Flight SQL door's address and whether it speaks TLS, when it is open.
    flight: Option<(std::net::SocketAddr, bool)>,
    /// The HTTP server, until it has stopped.
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Stops the HTTP server (it lets the requests in flight finish).
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Doors {
    /// Binds the HTTP port and the SQL doors' ports and serves them: the SQL doors answer from
    /// the moment a version is accepted (until then, that no dataset is loaded yet), the API
    /// from the moment one serves (503 until then); the HTTP router and its OpenAPI document
    /// are built meanwhile on a thread of their own (connections wait for it in the backlog).
    async fn open(
        args: &ServeArgs,
        state: AppState,
        pg: eco_insights::pg::PgState,
        flight: eco_insights::flight::FlightState,
    ) -> anyhow::Result<Doors> {
        let bind = |addr: String, flag: &'static str| async move {
            tokio::net::TcpListener::bind(&addr).await.map_err(|e| anyhow::anyhow!("cannot bind {addr}{flag}: {e}"))
        };
        let listener = bind(args.bind.clone(), "").await?;
        let http = listener.local_addr()?;
        let pg = match &args.pg_bind {
            Some(addr) => {
                let listener = bind(addr.clone(), " (--pg-bind)").await?;
                let door = (listener.local_addr()?, pg.tls.is_some());
                tokio::spawn(eco_insights::pg::serve(listener, pg));
                Some(door)
            }
            None => None,
        };
        let flight = match &args.flight_bind {
            Some(addr) => {
                let listener = bind(addr.clone(), " (--flight-bind)").await?;
                let door = (listener.local_addr()?, flight.tls.is_some());
                tokio::spawn(eco_insights::flight::serve(listener, flight));
                Some(door)
            }
            None => None,
        };
        let limits = args.limits();
        let router = std::thread::Builder::new().name("eco-router".into()).spawn({
            let state = state.clone();
            move || Prepared::new(state, limits)
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            let prepared = tokio::task::spawn_blocking(move || match router.map(|built| built.join()) {
                Ok(Ok(prepared)) => prepared,
                // Not started, or stopped: built here instead (a panic would repeat, and say why).
                _ => Prepared::new(state, limits),
            })
            .await
            .map_err(std::io::Error::other)?;
            prepared
                .serve_on(listener)
                .run_until(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Doors { http, pg, flight, serving, stop })
    }
}

/// Makes the SQL tables' folder of each dataset version as soon as it serves (the export the
/// load kept is moved in, the views' statements written: milliseconds), on a thread of its own.
fn prepare_sql_tables(store: Arc<Store>, sql: Arc<eco_insights::engine::sql::worker::Runner>) {
    let spawned = std::thread::Builder::new().name("eco-sql-tables".into()).spawn(move || {
        let mut prepared = None::<String>;
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let Some(current) = store.current() else { continue };
            if prepared.as_ref() != Some(&current.info.version) {
                sql.prepare(&current);
                prepared = Some(current.info.version.clone());
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the thread preparing the SQL tables: {e}");
    }
}

/// The dataset kept in the state folder, loaded when the export is refused at start-up; `None`
/// (with a log line) when nothing is kept or what is kept is refused.
fn start_from_state(state: &StateDir, args: &ServeArgs) -> Option<eco_insights::engine::snapshot::Snapshot> {
    match reload::load_kept(state, args.input_limits()) {
        Ok(Some(snapshot)) => {
            eco_insights::http::warm(&snapshot);
            Some(snapshot)
        }
        Ok(None) => {
            tracing::warn!(state_dir = %state.path().display(), "the state folder keeps no dataset");
            None
        }
        Err(why) => {
            tracing::error!(state_dir = %state.path().display(), "the dataset kept in the state folder is not served: {why}");
            None
        }
    }
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
