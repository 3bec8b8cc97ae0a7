// SPDX-License-Identifier: GPL-2.0

//! `HttpApi` against a stand-in API server on a loopback port: the paths,
//! methods, bearer token and bodies it sends, and how it reads answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use vgpu_dra::kube::{HttpApi, KubeApi};
use vgpu_dra::slice::resource_slice;

/// One request as the server saw it: (method, path, authorization, body).
type Seen = (String, String, String, String);

/// Serves `answers` (status, body) to the next requests, one each; reports
/// each request on the channel.
fn server(answers: Vec<(u16, String)>) -> (String, mpsc::Receiver<Seen>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (status, body) in answers {
            let (mut s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let (mut len, mut auth) = (0usize, String::new());
            loop {
                let mut h = String::new();
                r.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap();
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap(),
                    "authorization" => auth = v.trim().to_string(),
                    _ => {}
                }
            }
            let mut b = vec![0; len];
            r.read_exact(&mut b).unwrap();
            tx.send((method, path, auth, String::from_utf8(b).unwrap()))
                .unwrap();
            write!(
                s,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
    });
    (url, rx)
}

#[test]
fn reads_claims_with_the_token() {
    let claim = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":"ns","uid":"u-1"},"spec":{}}"#;
    let (url, rx) = server(vec![
        (200, claim.to_string()),
        (
            404,
            r#"{"kind":"Status","message":"resourceclaims \"gone\" not found"}"#.to_string(),
        ),
        (
            403,
            r#"{"kind":"Status","message":"forbidden: no access"}"#.to_string(),
        ),
    ]);
    let api = HttpApi::new(&url, Some("tok".into()), None).unwrap();
    let c = api.claim("ns", "c").unwrap();
    assert_eq!(c.metadata.uid.as_deref(), Some("u-1"));
    let (m, p, a, _) = rx.recv().unwrap();
    assert_eq!(
        (m.as_str(), p.as_str(), a.as_str()),
        (
            "GET",
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c",
            "Bearer tok"
        )
    );
    let e = api.claim("ns", "gone").unwrap_err().to_string();
    assert!(e.contains("claim ns/gone not found"), "{e}");
    let e = api.claim("ns", "c").unwrap_err().to_string();
    assert!(e.contains("HTTP 403: forbidden: no access"), "{e}");
    // Names that could leave the API's paths never reach the server.
    let e = api
        .claim("ns", "../../api/v1/secrets")
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not a valid object name"), "{e}");
}

#[test]
fn creates_then_replaces_the_slice() {
    let s = resource_slice("vgpu.dev", "n1", &[], None, 0);
    // The server answers with the object it stored; here with a generation
    // of its own, to tell its answer from what was sent.
    let mut stored = serde_json::to_value(&s).unwrap();
    stored["spec"]["pool"]["generation"] = 7.into();
    let stored = stored.to_string();
    let (url, rx) = server(vec![
        (201, stored.clone()),
        (200, stored.clone()),
        (200, stored),
        (409, r#"{"message":"conflict"}"#.into()),
        (200, "{}".into()),
    ]);
    let api = HttpApi::new(&url, None, None).unwrap();
    let kept = api.put_slice(&s, false, false).unwrap();
    assert_eq!(kept.spec.pool.generation, 7);
    let (m, p, a, b) = rx.recv().unwrap();
    assert_eq!(
        (m.as_str(), p.as_str(), a.as_str()),
        ("POST", "/apis/resource.k8s.io/v1/resourceslices", "")
    );
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["apiVersion"], "resource.k8s.io/v1");
    assert_eq!(v["kind"], "ResourceSlice");
    assert_eq!(v["spec"]["pool"]["name"], "n1");
    api.put_slice(&s, true, false).unwrap();
    let (m, p, _, _) = rx.recv().unwrap();
    assert_eq!(
        (m.as_str(), p.as_str()),
        ("PUT", "/apis/resource.k8s.io/v1/resourceslices/n1-vgpu-dev")
    );
    // A dry run asks the server what it would store.
    api.put_slice(&s, true, true).unwrap();
    let (m, p, _, _) = rx.recv().unwrap();
    assert_eq!(
        (m.as_str(), p.as_str()),
        (
            "PUT",
            "/apis/resource.k8s.io/v1/resourceslices/n1-vgpu-dev?dryRun=All"
        )
    );
    let e = api.put_slice(&s, true, false).unwrap_err().to_string();
    assert!(e.contains("HTTP 409: conflict"), "{e}");
    // An answer that is not a slice is an error, not a silent success.
    let e = api.put_slice(&s, true, false).unwrap_err().to_string();
    assert!(e.contains("the answer"), "{e}");
}

#[test]
fn a_ca_file_without_certificates_is_refused() {
    let e = HttpApi::new("https://127.0.0.1:1", None, Some(b"not a pem"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no certificate"), "{e}");
}
