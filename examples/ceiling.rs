//! The static ceiling of `make bench`: the least an HTTP server can do for a fixed answer.
//! axum on tokio answering every GET with bytes read once at start (argv[1]) after checking the
//! two credential headers, on 127.0.0.1 and a free port (printed as `listening on http://...`).
//! The service's fixed answers are measured against it in the same run.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).expect("usage: ceiling BODY_FILE");
    let body = Bytes::from(std::fs::read(&path)?);
    let body = Arc::new(body);
    let answer = move |headers: HeaderMap| {
        let body = Arc::clone(&body);
        async move {
            let ok = headers.get("x-api-key").is_some_and(|v| v == "demo-key")
                && headers.get("x-api-secret").is_some_and(|v| v == "demo-secret");
            if !ok {
                return (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "application/json")], Bytes::new())
                    .into_response();
            }
            (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], (*body).clone()).into_response()
        }
    };
    let app = Router::new().fallback(get(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}", listener.local_addr()?);
    use std::io::Write;
    std::io::stdout().flush()?;
    axum::serve(listener, app).await
}
