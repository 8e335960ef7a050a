//! The listener `serve` accepts connections on. hyper answers a request it
//! cannot read itself, before the router sees it: 400 for bytes that are not
//! an HTTP request line or header (an address holding bytes that are not
//! ASCII, invalid UTF-8 among them), 414 for an address longer than 65,534
//! bytes, 431 for headers past its buffer. Those answers are a status line,
//! `content-length: 0` and a date, nothing to read. Each connection here
//! watches what it writes: such an answer goes out with a body, the site's
//! error page or, when the request line it read began with an API path,
//! `{"error": "..."}` (see [`super::error_bodies`], which fills the
//! router's own bare answers).
//!
//! An answer is taken for one of hyper's when its head is exactly that: one
//! of those three statuses, `content-length: 0`, and no header but `date`
//! and `connection`. The router's error answers always carry a
//! `content-type` and a body (HEAD answers included), so none is mistaken.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::error_bodies::{error_body, is_api_path};

/// How much of a request's beginning a connection keeps: enough for the
/// method and the start of the path.
const KEPT_REQUEST_BYTES: usize = 256;

/// A TCP listener whose connections give hyper's bare refusals a body.
pub struct ErrorBodyListener {
    inner: TcpListener,
    /// The stylesheet the error page links (the current build's).
    stylesheet: Arc<str>,
}

impl ErrorBodyListener {
    pub fn new(inner: TcpListener, stylesheet: &str) -> ErrorBodyListener {
        ErrorBodyListener { inner, stylesheet: stylesheet.into() }
    }
}

impl axum::serve::Listener for ErrorBodyListener {
    type Io = ErrorBodyIo<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        (ErrorBodyIo::new(stream, Arc::clone(&self.stylesheet)), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// The listener `serve` uses: hyper's refusals filled, and `TCP_NODELAY` on
/// each connection (without it a response written in two parts, headers
/// then a file's body, waits on the client's delayed ACK: 40 ms a file).
/// `stylesheet` is the one the error page links.
pub fn site_listener(
    tcp: TcpListener,
    stylesheet: &str,
) -> axum::serve::TapIo<ErrorBodyListener, fn(&mut ErrorBodyIo<TcpStream>)> {
    fn nodelay(io: &mut ErrorBodyIo<TcpStream>) {
        if let Err(error) = io.get_mut().set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
    }
    axum::serve::ListenerExt::tap_io(ErrorBodyListener::new(tcp, stylesheet), nodelay as fn(&mut _))
}

/// One connection; see the module's documentation.
pub struct ErrorBodyIo<T> {
    inner: T,
    /// The first bytes read of the latest request.
    request_start: Vec<u8>,
    /// An answer was written since the last read: the next read begins a
    /// new request.
    answered: bool,
    /// A filled refusal being written, how much of it is out, and the
    /// length of hyper's bare one it stands for.
    pending: Option<(Vec<u8>, usize, usize)>,
    stylesheet: Arc<str>,
}

impl<T> ErrorBodyIo<T> {
    pub fn new(inner: T, stylesheet: Arc<str>) -> ErrorBodyIo<T> {
        ErrorBodyIo { inner, request_start: Vec::new(), answered: true, pending: None, stylesheet }
    }

    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ErrorBodyIo<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        if !read.is_empty() {
            if this.answered {
                this.request_start.clear();
                this.answered = false;
            }
            let room = KEPT_REQUEST_BYTES.saturating_sub(this.request_start.len());
            this.request_start.extend_from_slice(&read[..read.len().min(room)]);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> ErrorBodyIo<T> {
    /// Writes out what is left of a filled refusal.
    fn poll_write_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some((bytes, written, _)) = self.pending.as_mut() {
            while *written < bytes.len() {
                let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                *written += n;
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Notes an answer's start, and fills it if it is one of hyper's bare
    /// refusals: `Some(n)` once the filled one is out in place of `buf`'s
    /// n bytes (hyper writes the same bytes again after a `Pending`).
    fn poll_answer(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<Option<usize>>> {
        if self.pending.is_none() {
            if buf.starts_with(b"HTTP/1.") {
                self.answered = true;
            }
            let Some((status, date)) = bare_refusal(buf) else {
                return Poll::Ready(Ok(None));
            };
            let filled = filled_refusal(status, date, &self.request_start, &self.stylesheet);
            self.pending = Some((filled, 0, buf.len()));
        }
        ready!(self.poll_write_out(cx))?;
        let (_, _, replaced) = self.pending.take().expect("a filled refusal");
        Poll::Ready(Ok(Some(replaced)))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ErrorBodyIo<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(taken) = ready!(this.poll_answer(cx, buf))? {
            return Poll::Ready(Ok(taken));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // hyper's refusal is a head alone, one buffer; an answer with a
        // body is more than one, or a head that is not bare.
        let mut nonempty = bufs.iter().filter(|buf| !buf.is_empty());
        match (nonempty.next(), nonempty.next()) {
            (Some(only), None) => {
                if let Some(taken) = ready!(this.poll_answer(cx, only))? {
                    return Poll::Ready(Ok(taken));
                }
            }
            (Some(first), Some(_)) if first.starts_with(b"HTTP/1.") => this.answered = true,
            _ => {}
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_out(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_out(cx))?;
        this.pending = None;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// The status of `head` when it is one of hyper's bare refusals: a whole
/// head (nothing after its blank line), status 400, 414 or 431,
/// `content-length: 0`, and no header but `date` and `connection`.
fn bare_refusal(head: &[u8]) -> Option<(StatusCode, Option<&str>)> {
    // Most writes are answers' heads and bodies: told apart at a glance.
    if head.len() > 256 || !head.starts_with(b"HTTP/1.") || head.get(9) != Some(&b'4') {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let text = text.strip_prefix("HTTP/1.1 ").or_else(|| text.strip_prefix("HTTP/1.0 "))?;
    let lines = text.strip_suffix("\r\n\r\n")?;
    let mut lines = lines.split("\r\n");
    let status_line = lines.next()?;
    let status = match status_line.get(..3)? {
        "400" => StatusCode::BAD_REQUEST,
        "414" => StatusCode::URI_TOO_LONG,
        "431" => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => return None,
    };
    let (mut length_zero, mut date) = (false, None);
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "content-length" if value == "0" => length_zero = true,
            "date" => date = Some(value),
            "connection" => {}
            _ => return None,
        }
    }
    length_zero.then_some((status, date))
}

/// The answer that goes out instead: the same status with a body, JSON
/// when the request it answers began with an API path.
fn filled_refusal(status: StatusCode, date: Option<&str>, request_start: &[u8], stylesheet: &str) -> Vec<u8> {
    let api = request_path(request_start).is_some_and(|path| is_api_path(&path));
    let said = match status {
        StatusCode::BAD_REQUEST => {
            "the request could not be read as HTTP: an address holds only ASCII \
             (percent-encode anything else), and so does every header's name"
        }
        StatusCode::URI_TOO_LONG => "the address is longer than this server reads (65,534 bytes)",
        _ => "the request's headers are larger than this server reads",
    };
    let (body, content_type) = error_body(status, api, Some(said), stylesheet);
    let date = date.map(|date| format!("date: {date}\r\n")).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n{date}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len(),
    );
    [head.into_bytes(), body.into_bytes()].concat()
}

/// The path a request line begins with, as far as it was kept (the
/// machine surfaces are told apart by their first segments).
fn request_path(request_start: &[u8]) -> Option<String> {
    let line = request_start.split(|byte| *byte == b'\n').next()?;
    let mut words = line.split(|byte| *byte == b' ');
    let _method = words.next()?;
    let target = words.next()?;
    let target = String::from_utf8_lossy(target);
    // An absolute form (`http://host/path`) names its path after the host.
    let path = match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |at| &rest[at..]).to_string(),
        None => target.into_owned(),
    };
    Some(path.split(['?', '#']).next().unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bare_refusals_are_taken() {
        let date = "date: Mon, 02 Nov 2026 10:00:00 GMT";
        assert_eq!(
            bare_refusal(
                format!("HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n{date}\r\n\r\n").as_bytes()
            ),
            Some((StatusCode::URI_TOO_LONG, Some("Mon, 02 Nov 2026 10:00:00 GMT")))
        );
        assert_eq!(
            bare_refusal(
                format!(
                    "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n{date}\r\n\r\n"
                )
                .as_bytes()
            ),
            Some((StatusCode::BAD_REQUEST, Some("Mon, 02 Nov 2026 10:00:00 GMT")))
        );
        for other in [
            // The router's answers carry a type (and a body).
            format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/html\r\ncontent-length: 0\r\n{date}\r\n\r\n"
            ),
            format!("HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n{date}\r\n\r\n"),
            format!("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n{date}\r\n\r\n"),
            format!("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n{date}\r\n\r\n"),
            // A head with its body after it.
            format!("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n{date}\r\n\r\nx"),
            // Not a head at all.
            "400 Bad Request".to_string(),
        ] {
            assert_eq!(bare_refusal(other.as_bytes()), None, "{other:?}");
        }
    }

    #[test]
    fn the_request_line_tells_an_api_from_a_page() {
        assert_eq!(request_path(b"GET /api/v1/loops/xxxxxxxx").as_deref(), Some("/api/v1/loops/xxxxxxxx"));
        assert_eq!(request_path(b"POST /v1/traces HTTP/1.1\r\nhost: x\r\n").as_deref(), Some("/v1/traces"));
        assert_eq!(
            request_path(b"GET http://h:3000/api/v1/audit?x HTTP/1.1").as_deref(),
            Some("/api/v1/audit")
        );
        assert_eq!(request_path(b"GET /issues?").as_deref(), Some("/issues"));
        assert_eq!(request_path(b"").as_deref(), None);
        let page = String::from_utf8(filled_refusal(
            StatusCode::URI_TOO_LONG,
            Some("D"),
            b"GET /issues/aaaa",
            "/pkg/0a1b2c3d/fixedpoint.css",
        ))
        .unwrap();
        assert!(page.starts_with("HTTP/1.1 414 URI Too Long\r\ncontent-type: text/html"), "{page}");
        assert!(page.contains("<a href=\"/\">Back to the home page</a>"), "{page}");
        assert!(page.contains("href=\"/pkg/0a1b2c3d/fixedpoint.css\""), "the build's stylesheet: {page}");
        assert!(page.contains("connection: close\r\ndate: D\r\n\r\n"), "{page}");
        let (head, body) = page.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let api = String::from_utf8(filled_refusal(
            StatusCode::BAD_REQUEST,
            None,
            b"GET /api/v1/x\xff",
            "/pkg/x.css",
        ))
        .unwrap();
        let (_, body) = api.split_once("\r\n\r\n").unwrap();
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(body["error"].as_str().unwrap().contains("ASCII"), "{body}");
    }
}
