//! End-to-end tests of `interlock client` against a real `interlock dev` gateway (loopback
//! only), over Streamable HTTP and over the stdio child the client launches itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod arguments;
mod lossless;
mod server_info;
mod tasks;
mod timeout;
mod tools_call;
mod tools_list;
