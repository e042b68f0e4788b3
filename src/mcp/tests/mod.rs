//! Behaviour tests of the MCP layer, one file per behaviour. Every request is
//! built by [`support::Request`] from headers plus a JSON body and goes
//! through the public [`crate::mcp::dispatch`], as the HTTP layer would send it.

mod ladder;
mod legacy;
mod method_table;
mod outcomes;
mod support;
mod tasks;
mod tool_catalog;
mod tools_call;
mod tools_list;
mod transport;
