//! The command line: every flag can also be set through the environment variable it names.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::engine::load::{InputLimits, DEFAULT_MAX_ROWS};
use crate::engine::views::CostConfig;
pub use crate::process::logging::LogFormat;

#[derive(Debug, Parser)]
#[command(
    name = "eco-insights",
    version,
    about = "Read-only HTTP JSON service over a vehicle-efficiency catalog (rankings, insights, aggregations, comparisons).",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load the catalog and serve the HTTP API.
    Serve(ServeArgs),
    /// Runs one analyst query for the service (started by `serve`, reads its request on
    /// standard input); not meant to be run by hand.
    #[command(hide = true)]
    SqlWorker,
    /// Writes a dataset version's SQL tables ahead, in the folder the service made for it
    /// (started by `serve`); not meant to be run by hand.
    #[command(hide = true)]
    SqlTables { dir: std::path::PathBuf, tables: Vec<String> },
    /// Write a deterministic synthetic sample catalog (Parquet).
    Generate(GenerateArgs),
    /// Check a Parquet export against the input schema; prints every problem, exits 1 if invalid.
    Validate(ValidateArgs),
    /// Manage the credentials file: add a client (prints its new key and secret once), list, give a
    /// client a SCRAM verifier, revoke.
    #[command(subcommand)]
    Credentials(CredentialsCommand),
    /// Write the analyst report: one self-contained HTML page in Portuguese (charts as inline
    /// SVG, tables, fleet averages, the numbers as embedded JSON), computed like the API's answers
    /// with the server's default cost configuration. Exits 2 with the validator's message when the
    /// file is invalid or unreadable, 1 on any other failure.
    Report(ReportArgs),
    /// Compare two exports by id: vehicles added, removed, changed (each changed field with its
    /// old and new value, published metrics included) and unchanged. Exits 2 when a file is
    /// invalid (with the validator's message), 1 on other failures, 0 otherwise.
    Diff(DiffArgs),
    /// Import official tables into a catalog export: `import pbev PDF...` reads INMETRO's PBEV
    /// tables as published and writes one Parquet export (exits 2 naming the file when a PDF is
    /// not a readable PBEV table, writing nothing).
    #[command(subcommand)]
    Import(ImportCommand),
}

/// Sources `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// INMETRO's Programa Brasileiro de Etiquetagem Veicular tables (PDF, one per year, exactly
    /// as published) into one catalog export (API-CONTRACT §8). Columns are found by their
    /// headers; codes become the catalog's words; every error of the tables themselves is named
    /// in the summary with its page and row, beside the totals the first page prints. The
    /// export is written under a temporary name and renamed when complete, so a running service
    /// swaps it in and a failed import leaves the old file untouched. Exits 0 when written,
    /// 2 when a PDF is not a readable PBEV table (nothing written), 1 on other failures.
    Pbev(ImportPbevArgs),
}

/// Output of `import pbev`'s summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// Per table: year, rows, counts by propulsion and fuel, brands, the cover's totals beside
    /// the counts imported, and each problem with page and row.
    Text,
    /// The same as one JSON document.
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct ImportPbevArgs {
    /// The PBEV tables (PDF), one or more years.
    #[arg(required = true)]
    pub pdfs: Vec<PathBuf>,
    /// The catalog export to write (Parquet).
    #[arg(long, env = "ECO_IMPORT_OUT", default_value = "data/catalog.parquet")]
    pub out: PathBuf,
    /// Summary format.
    #[arg(long, value_enum, default_value_t = ImportFormat::Text)]
    pub format: ImportFormat,
    /// The brand alias list (TOML: `[aliases]` printed spelling = catalog spelling, and
    /// `conhecidas`, the brands known); brands outside it are listed in the summary. Default:
    /// data/pbev/marcas.toml when it exists, else the list the binary was built with.
    #[arg(long, env = "ECO_IMPORT_MARCAS")]
    pub marcas: Option<PathBuf>,
    /// For tables without a propulsion column: the model and version name patterns of hybrids
    /// and plug-ins (TOML: `plug_in` and `hibrido`, lists of words; `*` any run, `#` a digit).
    /// Default: data/pbev/propulsao.toml when it exists, else the list the binary was built with.
    #[arg(long, env = "ECO_IMPORT_PROPULSAO")]
    pub propulsao: Option<PathBuf>,
    /// Seconds one PDF may take to read; a file that takes longer (a damaged or hostile file
    /// can make the reader crawl) ends the import with exit 2, nothing written.
    #[arg(long, env = "ECO_IMPORT_READ_TIMEOUT", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub read_timeout: u64,
}

/// Output of `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// A summary and one line per vehicle and changed field, for people.
    Text,
    /// One JSON document: added, removed, changed, unchanged (counts) and changes.
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The previous export (Parquet).
    #[arg(env = "ECO_DIFF_OLD")]
    pub old: PathBuf,
    /// The new export (Parquet).
    #[arg(env = "ECO_DIFF_NEW")]
    pub new: PathBuf,
    /// Output format.
    #[arg(long, env = "ECO_DIFF_FORMAT", value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Folder of the SQL views that compute the published metrics (the cost configuration is the
    /// server's default: 12,000 km/year and the default prices).
    #[arg(long, env = "ECO_QUERIES", default_value = "queries")]
    pub queries: PathBuf,
    /// Largest file accepted, in bytes (as `serve --max-data-bytes`).
    #[arg(long, env = "ECO_MAX_DATA_BYTES", default_value_t = DEFAULT_MAX_DATA_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_data_bytes: u64,
    /// Most rows an export may declare in its metadata, checked before any column is decoded (a
    /// few kilobytes of Parquet can decode to gigabytes); a file declaring more is refused.
    #[arg(long, env = "ECO_MAX_ROWS", default_value_t = DEFAULT_MAX_ROWS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows: u64,
}

/// Default of `--max-data-bytes`: 2 GiB.
pub const DEFAULT_MAX_DATA_BYTES: u64 = 2 * 1024 * 1024 * 1024;

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Parquet catalog to serve: a local path (watched: a replaced file is validated and swapped
    /// in), or an object pulled from a store, `s3://BUCKET/KEY` (credentials, region and endpoint
    /// from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
    /// AWS_ENDPOINT_URL, AWS_PROFILE and the shared ~/.aws files; AWS_ALLOW_HTTP=true for a
    /// plain-HTTP endpoint) or `https://HOST/PATH` (polled every --poll-interval-ms).
    #[arg(long, env = "ECO_DATA", default_value = "data/catalog.parquet")]
    pub data: PathBuf,
    /// How often a remote --data (s3:// or https://) is asked for changes, in milliseconds: a
    /// conditional GET (If-None-Match), so an unchanged object costs one small request. While the
    /// source fails, the polls back off (doubling, up to 16 intervals or a minute).
    #[arg(long, env = "ECO_POLL_INTERVAL_MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(50..=3_600_000))]
    pub poll_interval_ms: u64,
    /// Address to listen on; port 0 picks a free port (the bound address is printed).
    #[arg(long, env = "ECO_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// JSON credentials file (key, name, SHA-256 of the secret, optional quota).
    #[arg(long, env = "ECO_CREDENTIALS", default_value = "config/credentials.json")]
    pub credentials: PathBuf,
    /// Folder of the Polars SQL views (run in file-name order).
    #[arg(long, env = "ECO_QUERIES", default_value = "queries")]
    pub queries: PathBuf,
    /// How often the data file is checked for changes, in milliseconds.
    #[arg(long, env = "ECO_RELOAD_INTERVAL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=3_600_000))]
    pub reload_interval_ms: u64,
    /// Kilometres per year of the annual cost estimate.
    #[arg(long, env = "ECO_KM_ANO", default_value_t = 12_000.0)]
    pub km_ano: f64,
    /// Gasoline price, R$/L.
    #[arg(long, env = "ECO_PRECO_GASOLINA", default_value_t = 6.20)]
    pub preco_gasolina: f64,
    /// Ethanol price, R$/L.
    #[arg(long, env = "ECO_PRECO_ETANOL", default_value_t = 4.10)]
    pub preco_etanol: f64,
    /// Diesel price, R$/L.
    #[arg(long, env = "ECO_PRECO_DIESEL", default_value_t = 6.00)]
    pub preco_diesel: f64,
    /// Natural gas price, R$/m³.
    #[arg(long, env = "ECO_PRECO_GNV", default_value_t = 4.80)]
    pub preco_gnv: f64,
    /// Electricity price, R$/kWh.
    #[arg(long, env = "ECO_PRECO_KWH", default_value_t = 0.85)]
    pub preco_kwh: f64,
    /// Log filter (tracing syntax, e.g. `info` or `eco_insights=debug`).
    #[arg(long, env = "ECO_LOG", default_value = "info")]
    pub log: String,
    /// Start even when the public demo credentials (demo-key / demo-secret) are active and
    /// --bind is not a loopback address (refused otherwise).
    #[arg(long, env = "ECO_ALLOW_DEMO_CREDENTIALS")]
    pub allow_demo_credentials: bool,
    /// On SIGTERM/SIGINT: stop accepting, let requests in flight finish for at most this many
    /// milliseconds, then exit 0.
    #[arg(long, env = "ECO_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,
    /// Largest data file accepted, in bytes (at start-up and on reload); a larger export is refused.
    #[arg(long, env = "ECO_MAX_DATA_BYTES", default_value_t = DEFAULT_MAX_DATA_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_data_bytes: u64,
    /// Most rows an export may declare in its metadata, checked before any column is decoded (a
    /// few kilobytes of Parquet can decode to gigabytes); a file declaring more is refused.
    #[arg(long, env = "ECO_MAX_ROWS", default_value_t = DEFAULT_MAX_ROWS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows: u64,
    /// Also serve analysts' SQL over the PostgreSQL protocol v3 on this address (`psql`,
    /// psycopg, BI tools; user = API key, password = its secret, checked with SCRAM-SHA-256).
    /// Off when unset; port 0 picks a free port (printed as `postgres listening on ADDR`). An
    /// address that is not loopback needs --pg-tls-cert and --pg-tls-key, or
    /// --pg-allow-plaintext (refused otherwise, exit 1).
    #[arg(long, env = "ECO_PG_BIND")]
    pub pg_bind: Option<String>,
    /// PEM file of the PostgreSQL door's TLS certificate (the server's first, then its
    /// intermediates); with --pg-tls-key, the door answers SSLRequest with TLS 1.2/1.3 and offers
    /// SCRAM-SHA-256-PLUS (channel binding). Both or neither; unreadable files are refused (exit 1).
    #[arg(long, env = "ECO_PG_TLS_CERT", value_name = "FILE")]
    pub pg_tls_cert: Option<PathBuf>,
    /// PEM file of the private key of --pg-tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "ECO_PG_TLS_KEY", value_name = "FILE")]
    pub pg_tls_key: Option<PathBuf>,
    /// Serve the PostgreSQL door without TLS on an address that is not loopback (secrets stay
    /// SCRAM-protected, but queries and answers cross the network in clear text).
    #[arg(long, env = "ECO_PG_ALLOW_PLAINTEXT")]
    pub pg_allow_plaintext: bool,
    /// Signed-in PostgreSQL connections at once at most; a login past them is answered 53300
    /// (too_many_connections) and closed. As many more may be in their start-up: when one more
    /// arrives, the oldest of them is closed, and each is closed when it has not signed in within
    /// --header-timeout-ms (so connections that never sign in cannot keep a client out).
    #[arg(long, env = "ECO_PG_MAX_CONNECTIONS", default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub pg_max_connections: usize,
    /// Also serve analysts' SQL over Arrow Flight SQL (gRPC) on this address: ADBC and the
    /// JDBC/ODBC Flight SQL drivers, answers as Arrow record batches. Sign-in is a basic-auth
    /// handshake with an API key and its secret, answered with a bearer token (valid 1 h, and only
    /// while the key is in the credentials file). Off when unset; port 0 picks a free port
    /// (printed as `flight listening on ADDR`). An address that is not loopback needs
    /// --flight-tls-cert and --flight-tls-key, or --flight-allow-plaintext (refused otherwise, exit 1).
    #[arg(long, env = "ECO_FLIGHT_BIND")]
    pub flight_bind: Option<String>,
    /// PEM file of the Flight SQL door's TLS certificate (the server's first, then its
    /// intermediates); with --flight-tls-key the door speaks gRPC over TLS 1.2/1.3 only. Both or
    /// neither; unreadable or mismatched files are refused (exit 1).
    #[arg(long, env = "ECO_FLIGHT_TLS_CERT", value_name = "FILE")]
    pub flight_tls_cert: Option<PathBuf>,
    /// PEM file of the private key of --flight-tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "ECO_FLIGHT_TLS_KEY", value_name = "FILE")]
    pub flight_tls_key: Option<PathBuf>,
    /// Serve the Flight SQL door without TLS on an address that is not loopback (secrets, tokens,
    /// queries and answers cross the network in clear text).
    #[arg(long, env = "ECO_FLIGHT_ALLOW_PLAINTEXT")]
    pub flight_allow_plaintext: bool,
    /// Rows an analyst's SQL query returns at most (`POST /sql` and the PostgreSQL door; the
    /// dialect is PostgreSQL's, run by Apache DataFusion); the rest are cut and `meta.truncated`
    /// says so.
    #[arg(long, env = "ECO_SQL_MAX_ROWS", default_value_t = crate::engine::sql::DEFAULT_MAX_ROWS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub sql_max_rows: usize,
    /// Time an analyst's SQL query may take, in milliseconds; then it is stopped and answered
    /// 422 QUERY_TOO_EXPENSIVE.
    #[arg(long, env = "ECO_SQL_TIMEOUT_MS", default_value_t = crate::engine::sql::DEFAULT_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub sql_timeout_ms: u64,
    /// Memory budget of one analyst's SQL query (its worker's heap and DataFusion's memory
    /// pool; the export it reads stays in the page cache, not counted), in MiB; past it the
    /// query is stopped and answered 422 QUERY_TOO_EXPENSIVE.
    #[arg(long, env = "ECO_SQL_MEMORY_MB", default_value_t = crate::engine::sql::DEFAULT_MEMORY_MB, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
    pub sql_memory_mb: u64,
    /// Analysts' SQL queries running at once; one more is answered 503 with Retry-After.
    #[arg(long, env = "ECO_SQL_WORKERS", default_value_t = crate::engine::sql::DEFAULT_WORKERS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub sql_workers: usize,
    /// Folder where the last accepted dataset is kept (a copy of the export with the views and
    /// cost configuration it was served with), written atomically on every accepted load. A
    /// restart whose export is missing or invalid serves the kept dataset. Off when unset; delete
    /// the folder (service stopped) to forget the kept dataset.
    #[arg(long, env = "ECO_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Log line format: `text`, or `json` (one object per line; every request line carries
    /// request_id, method, route, status, latency_ms and the client's name).
    #[arg(long, env = "ECO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Time a client has to send a request's complete head (request line and headers), in
    /// milliseconds, however slowly it trickles; then the connection is closed (within 1.25×
    /// of it). Also bounds an idle kept-alive connection.
    #[arg(long, env = "ECO_HEADER_TIMEOUT_MS", default_value_t = crate::process::limits::DEFAULT_HEADER_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_ms: u64,
    /// Time a request may take until its answer starts, in milliseconds; then 503
    /// SERVICE_UNAVAILABLE.
    #[arg(long, env = "ECO_REQUEST_TIMEOUT_MS", default_value_t = crate::process::limits::DEFAULT_REQUEST_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_ms: u64,
    /// API requests handled at once; more are answered 503 SERVICE_UNAVAILABLE with
    /// `Retry-After: 1` at once (/healthz, /readyz, /metrics,
    /// /openapi.json, /docs and the /explore page and assets are exempt).
    #[arg(long, env = "ECO_MAX_IN_FLIGHT", default_value_t = crate::process::limits::DEFAULT_MAX_IN_FLIGHT, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_in_flight: u32,
}

/// The input limits of a command's `--max-data-bytes` and `--max-rows`.
macro_rules! input_limits {
    ($($args:ty),*) => {$(
        impl $args {
            /// What an export may be before it is decoded (`--max-data-bytes`, `--max-rows`).
            pub fn input_limits(&self) -> InputLimits {
                InputLimits { max_bytes: self.max_data_bytes, max_rows: self.max_rows }
            }
        }
    )*};
}
input_limits!(ServeArgs, ValidateArgs, ReportArgs, DiffArgs);

impl ServeArgs {
    /// The limits of analysts' SQL queries.
    pub fn sql_limits(&self) -> crate::engine::sql::SqlLimits {
        crate::engine::sql::SqlLimits {
            max_rows: self.sql_max_rows,
            timeout: std::time::Duration::from_millis(self.sql_timeout_ms),
            memory_bytes: self.sql_memory_mb * 1024 * 1024,
            workers: self.sql_workers,
        }
    }

    /// The PostgreSQL door's certificate and key files (`--pg-tls-cert`, `--pg-tls-key`): both
    /// or neither.
    pub fn pg_tls_files(&self) -> anyhow::Result<Option<(&std::path::Path, &std::path::Path)>> {
        tls_pair(self.pg_tls_cert.as_deref(), self.pg_tls_key.as_deref(), "pg")
    }

    /// The Flight SQL door's certificate and key files (`--flight-tls-cert`, `--flight-tls-key`):
    /// both or neither.
    pub fn flight_tls_files(&self) -> anyhow::Result<Option<(&std::path::Path, &std::path::Path)>> {
        tls_pair(self.flight_tls_cert.as_deref(), self.flight_tls_key.as_deref(), "flight")
    }

    /// The HTTP limits of the server.
    pub fn limits(&self) -> crate::process::limits::Limits {
        crate::process::limits::Limits {
            header_timeout: std::time::Duration::from_millis(self.header_timeout_ms),
            request_timeout: std::time::Duration::from_millis(self.request_timeout_ms),
            max_in_flight: self.max_in_flight,
        }
    }

    /// The cost configuration, rejecting negative, zero or non-finite values.
    pub fn cost(&self) -> anyhow::Result<CostConfig> {
        let c = CostConfig {
            km_ano: self.km_ano,
            preco_gasolina: self.preco_gasolina,
            preco_etanol: self.preco_etanol,
            preco_diesel: self.preco_diesel,
            preco_gnv: self.preco_gnv,
            preco_kwh: self.preco_kwh,
        };
        for (name, v) in [
            ("km-ano", c.km_ano),
            ("preco-gasolina", c.preco_gasolina),
            ("preco-etanol", c.preco_etanol),
            ("preco-diesel", c.preco_diesel),
            ("preco-gnv", c.preco_gnv),
            ("preco-kwh", c.preco_kwh),
        ] {
            if !v.is_finite() || v <= 0.0 {
                anyhow::bail!("--{name} must be a positive number (got {v})");
            }
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, Args)]
pub struct GenerateArgs {
    /// Number of rows.
    #[arg(long, env = "ECO_GENERATE_ROWS", default_value_t = 12_000)]
    pub rows: usize,
    /// Random seed; the same rows and seed always give the same file.
    #[arg(long, env = "ECO_GENERATE_SEED", default_value_t = 2026)]
    pub seed: u64,
    /// Output Parquet file.
    #[arg(long, env = "ECO_GENERATE_OUT", default_value = "data/catalog.parquet")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Parquet export to check.
    #[arg(env = "ECO_VALIDATE_FILE")]
    pub file: PathBuf,
    /// Also check the views of this folder: its `parametros.toml` (the formula constants) and
    /// its SQL, run over the export with the default cost configuration, as a reload would.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Largest file accepted, in bytes (as `serve --max-data-bytes`).
    #[arg(long, env = "ECO_MAX_DATA_BYTES", default_value_t = DEFAULT_MAX_DATA_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_data_bytes: u64,
    /// Most rows an export may declare in its metadata, checked before any column is decoded (a
    /// few kilobytes of Parquet can decode to gigabytes); a file declaring more is refused.
    #[arg(long, env = "ECO_MAX_ROWS", default_value_t = DEFAULT_MAX_ROWS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows: u64,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Parquet catalog to report on.
    #[arg(long, env = "ECO_REPORT_DATA", default_value = "data/catalog.parquet")]
    pub data: PathBuf,
    /// HTML file to write (atomically: a temporary file in the same folder, then a rename).
    #[arg(long, env = "ECO_REPORT_OUT", default_value = "report.html")]
    pub out: PathBuf,
    /// Folder of the Polars SQL views (as `serve --queries`). The cost configuration is the
    /// server's default (the `serve` defaults of --km-ano and the prices), so the numbers and the
    /// dataset version are those of a server started with its defaults.
    #[arg(long, env = "ECO_QUERIES", default_value = "queries")]
    pub queries: PathBuf,
    /// Largest file accepted, in bytes (as `serve --max-data-bytes`).
    #[arg(long, env = "ECO_MAX_DATA_BYTES", default_value_t = DEFAULT_MAX_DATA_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_data_bytes: u64,
    /// Most rows an export may declare in its metadata, checked before any column is decoded (a
    /// few kilobytes of Parquet can decode to gigabytes); a file declaring more is refused.
    #[arg(long, env = "ECO_MAX_ROWS", default_value_t = DEFAULT_MAX_ROWS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows: u64,
}

#[derive(Debug, Clone, Subcommand)]
pub enum CredentialsCommand {
    /// Create a client: a random key and a 256-bit secret from the OS generator. Prints
    /// {"key": ..., "secret": ...} once; the file keeps only the SHA-256 of the secret and its
    /// SCRAM-SHA-256 verifier (for the PostgreSQL door).
    Add(CredentialsAddArgs),
    /// Print the clients (key, name, quota, whether it has a SCRAM verifier) as JSON; never a
    /// secret, its hash or its verifier.
    List(CredentialsFileArg),
    /// Give an existing client a SCRAM-SHA-256 verifier (a new salt) made from its secret, read
    /// from standard input (one line) and checked against the stored hash: an entry written
    /// before verifiers existed then logs in over the PostgreSQL protocol without TLS too.
    Scram(CredentialsScramArgs),
    /// Remove a client; exits 1 when the key is not in the file.
    Revoke(CredentialsRevokeArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CredentialsFileArg {
    /// The credentials file (written atomically, mode 0600).
    #[arg(long, env = "ECO_CREDENTIALS", default_value = "config/credentials.json")]
    pub file: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct CredentialsAddArgs {
    #[command(flatten)]
    pub file: CredentialsFileArg,
    /// Name of the client (shown by `list`).
    #[arg(long, env = "ECO_CREDENTIAL_NAME")]
    pub name: String,
    /// Requests per minute: the size of the key's token bucket, refilled at N/60 per second
    /// (no quota when absent).
    #[arg(long, env = "ECO_CREDENTIAL_QUOTA_PER_MINUTE", value_parser = clap::value_parser!(u32).range(1..))]
    pub quota_per_minute: Option<u32>,
}

#[derive(Debug, Clone, Args)]
pub struct CredentialsScramArgs {
    #[command(flatten)]
    pub file: CredentialsFileArg,
    /// The key whose verifier is (re)made.
    #[arg(env = "ECO_CREDENTIAL_KEY")]
    pub key: String,
}

#[derive(Debug, Clone, Args)]
pub struct CredentialsRevokeArgs {
    #[command(flatten)]
    pub file: CredentialsFileArg,
    /// The key to remove.
    #[arg(env = "ECO_CREDENTIAL_KEY")]
    pub key: String,
}

/// A door's TLS certificate and key files (`--{door}-tls-cert`, `--{door}-tls-key`): both or
/// neither.
fn tls_pair<'a>(
    cert: Option<&'a std::path::Path>,
    key: Option<&'a std::path::Path>,
    door: &str,
) -> anyhow::Result<Option<(&'a std::path::Path, &'a std::path::Path)>> {
    let env = door.to_uppercase();
    match (cert, key) {
        (Some(cert), Some(key)) => Ok(Some((cert, key))),
        (None, None) => Ok(None),
        (Some(_), None) => {
            anyhow::bail!("--{door}-tls-cert needs --{door}-tls-key (ECO_{env}_TLS_KEY): give both or neither")
        }
        (None, Some(_)) => {
            anyhow::bail!("--{door}-tls-key needs --{door}-tls-cert (ECO_{env}_TLS_CERT): give both or neither")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_and_cost_checks() {
        let cli = Cli::try_parse_from(["eco-insights", "serve"]).unwrap();
        let Command::Serve(s) = cli.command else { panic!() };
        assert_eq!(s.bind, "127.0.0.1:8080");
        assert_eq!(s.cost().unwrap(), CostConfig::default());
        let cli = Cli::try_parse_from(["eco-insights", "serve", "--preco-kwh", "0"]).unwrap();
        let Command::Serve(s) = cli.command else { panic!() };
        assert!(s.cost().unwrap_err().to_string().contains("preco-kwh"));
        assert!(s.pg_tls_files().unwrap().is_none() && !s.pg_allow_plaintext);
    }

    #[test]
    fn pg_tls_files_come_in_pairs() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["eco-insights", "serve"], args].concat()).unwrap();
            let Command::Serve(s) = cli.command else { panic!() };
            s
        };
        let both = parse(&["--pg-tls-cert", "c.pem", "--pg-tls-key", "k.pem"]);
        let (cert, key) = both.pg_tls_files().unwrap().unwrap();
        assert_eq!((cert, key), (std::path::Path::new("c.pem"), std::path::Path::new("k.pem")));
        let cert_only = parse(&["--pg-tls-cert", "c.pem"]).pg_tls_files().unwrap_err().to_string();
        assert!(cert_only.contains("--pg-tls-key"), "{cert_only}");
        let key_only = parse(&["--pg-tls-key", "k.pem"]).pg_tls_files().unwrap_err().to_string();
        assert!(key_only.contains("--pg-tls-cert"), "{key_only}");
    }

    #[test]
    fn report_defaults() {
        let cli = Cli::try_parse_from(["eco-insights", "report"]).unwrap();
        let Command::Report(r) = cli.command else { panic!() };
        assert_eq!(r.data, PathBuf::from("data/catalog.parquet"));
        assert_eq!(r.out, PathBuf::from("report.html"));
        assert_eq!(r.queries, PathBuf::from("queries"));
    }
}
