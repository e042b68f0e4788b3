//! The process allocator: mimalloc, for every binary that links this crate (the gateway,
//! its tests and benchmarks measure the same allocator).
//!
//! Chosen by measurement (BENCHMARKS.md, issue 14): under 32 connections of governed load,
//! glibc's malloc, free and consolidation took about a fifth of the gateway's CPU; a
//! governed call allocates many short-lived small objects (JSON values, SQL tokens and
//! AST nodes, protocol buffers) on one thread and frees most of them on the same thread,
//! which is the case mimalloc's per-thread free lists serve best.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
