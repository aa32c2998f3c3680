//! The OpenAPI document (`/openapi.json`) and the offline docs page (`/docs`).

pub mod openapi;
