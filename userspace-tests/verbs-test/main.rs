// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
//! rsiw-verbs-test: a userspace verbs conformance program for an iWARP device's data path
//! (RFC 5040 RDMAP, RFC 5041 DDP), run as a server and a client over rdma_cm.

mod atomic;
mod cases;
mod dv;
mod hostile;
mod proto;
mod requester;
mod responder;
mod wait;
mod zc_window;

use rsiw_userspace_tests::ffi;

use requester::Env;
use std::io::Write;
use std::net::{SocketAddrV4, ToSocketAddrs};
use std::process::ExitCode;

/// A case error starting with this is a skip (the device lacks what the case needs).
pub const SKIP_PREFIX: &str = "SKIP: ";

const USAGE: &str = "usage: rsiw-verbs-test (--server ADDR | --client ADDR | --list) [--dev NAME]
       [--case PATTERN[,PATTERN…]] [--skip PATTERN[,PATTERN…]] [--tag TAG] [--results FILE]
ADDR is IPv4[:PORT] (port 7471 by default). A PATTERN is a case name, or a prefix ending in '*'.
Each case prints `RSIW-TEST PASS TAG case` or `RSIW-TEST FAIL TAG case: why`.";

struct Opts {
    server: Option<SocketAddrV4>,
    client: Option<SocketAddrV4>,
    list: bool,
    dev: Option<String>,
    cases: Vec<String>,
    skip: Vec<String>,
    tag: String,
    results: Option<String>,
}

fn addr(s: &str) -> Result<SocketAddrV4, String> {
    let s = if s.contains(':') {
        s.to_string()
    } else {
        format!("{s}:7471")
    };
    s.to_socket_addrs()
        .map_err(|e| format!("{s}: {e}"))?
        .find_map(|a| match a {
            std::net::SocketAddr::V4(v) => Some(v),
            _ => None,
        })
        .ok_or_else(|| format!("{s}: no IPv4 address"))
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        server: None,
        client: None,
        list: false,
        dev: None,
        cases: Vec::new(),
        skip: Vec::new(),
        tag: "verbs".into(),
        results: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        let list = |v: String| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        match a.as_str() {
            "--server" => o.server = Some(addr(&val()?)?),
            "--client" => o.client = Some(addr(&val()?)?),
            "--list" => o.list = true,
            "--dev" => o.dev = Some(val()?),
            "--case" => o.cases.extend(list(val()?)),
            "--skip" => o.skip.extend(list(val()?)),
            "--tag" => o.tag = val()?,
            "--results" => o.results = Some(val()?),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if usize::from(o.server.is_some()) + usize::from(o.client.is_some()) + usize::from(o.list) != 1
    {
        return Err("give exactly one of --server, --client, --list".into());
    }
    Ok(o)
}

fn matches(pat: &str, name: &str) -> bool {
    match pat.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pat == name,
    }
}

fn report(o: &Opts, line: &str) {
    println!("RSIW-TEST {line}");
    if let Some(f) = &o.results {
        let r = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(f);
        if let Err(e) = r.and_then(|mut h| writeln!(h, "{line}")) {
            eprintln!("rsiw-verbs-test: writing {f}: {e}");
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = atomic::worker_main(&args)
        .or_else(|| atomic::target_main(&args))
        .or_else(|| hostile::main(&args))
        .or_else(|| zc_window::main(&args))
    {
        return code;
    }
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rsiw-verbs-test: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(a) = o.server {
        return match responder::serve(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rsiw-verbs-test: server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let named = |c: &cases::Case| o.cases.iter().any(|p| matches(p, &c.name));
    let selected: Vec<cases::Case> = cases::all()
        .into_iter()
        .filter(|c| o.cases.is_empty() || named(c))
        .chain(cases::bulk().into_iter().filter(|c| named(c)))
        .collect();
    if o.list {
        for c in &selected {
            println!("{}", c.name);
        }
        return ExitCode::SUCCESS;
    }
    let Some(server) = o.client else {
        return ExitCode::from(2);
    };
    let env = Env {
        server,
        dev: o.dev.clone(),
    };
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for c in &selected {
        if o.skip.iter().any(|p| matches(p, &c.name)) {
            println!("rsiw-verbs-test: skipped {}", c.name);
            skipped += 1;
            continue;
        }
        match (c.run)(&env) {
            Ok(()) => {
                passed += 1;
                report(&o, &format!("PASS {} {}", o.tag, c.name));
            }
            Err(why) if why.starts_with(SKIP_PREFIX) => {
                skipped += 1;
                let why = why.strip_prefix(SKIP_PREFIX).unwrap_or_default();
                report(&o, &format!("SKIP {} {}: {}", o.tag, c.name, why));
            }
            Err(why) => {
                failed += 1;
                report(
                    &o,
                    &format!("FAIL {} {}: {}", o.tag, c.name, why.replace('\n', " ")),
                );
            }
        }
    }
    if let Err(e) = requester::quit(&env) {
        eprintln!("rsiw-verbs-test: stopping the server: {e}");
    }
    println!("rsiw-verbs-test: {passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
