// A thin, typed shim over libcurl's variadic calls. Swift cannot call C variadic functions
// such as curl_easy_setopt, so each argument type gets one non-variadic wrapper here.
#ifndef FETCHD_CCURL_SHIM_H
#define FETCHD_CCURL_SHIM_H

#include <curl/curl.h>
#include <stddef.h>

/// Sets a long-valued option (CURLOPT_TIMEOUT_MS, CURLOPT_NOSIGNAL, ...).
CURLcode fetchd_curl_setopt_long(CURL *handle, CURLoption option, long value);
/// Sets a string-valued option; libcurl copies the string.
CURLcode fetchd_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
/// Sets a pointer-valued option (userdata, slist).
CURLcode fetchd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
/// Sets a curl_off_t-valued option (CURLOPT_MAXFILESIZE_LARGE, ...).
CURLcode fetchd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value);

/// The body callback: receives `size * count` bytes; returns the bytes it consumed.
typedef size_t (*fetchd_curl_data_callback)(char *data, size_t size, size_t count, void *userdata);
/// The progress callback: returns non-zero to abort the transfer.
typedef int (*fetchd_curl_progress_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                             curl_off_t ultotal, curl_off_t ulnow);

/// The pre-request callback (CURLOPT_PREREQFUNCTION): the connected address and port; returns
/// CURL_PREREQFUNC_OK, or CURL_PREREQFUNC_ABORT to fail the transfer.
typedef int (*fetchd_curl_prereq_callback)(void *userdata, char *primary_ip, char *local_ip,
                                           int primary_port, int local_port);

/// Installs the body (CURLOPT_WRITEFUNCTION) callback.
CURLcode fetchd_curl_set_write_callback(CURL *handle, fetchd_curl_data_callback callback);
/// Installs the header (CURLOPT_HEADERFUNCTION) callback.
CURLcode fetchd_curl_set_header_callback(CURL *handle, fetchd_curl_data_callback callback);
/// Installs the progress (CURLOPT_XFERINFOFUNCTION) callback and enables progress reporting.
CURLcode fetchd_curl_set_progress_callback(CURL *handle, fetchd_curl_progress_callback callback);

/// Installs the pre-request callback (CURLOPT_PREREQFUNCTION) and its userdata (CURLOPT_PREREQDATA).
CURLcode fetchd_curl_set_prereq_callback(CURL *handle, fetchd_curl_prereq_callback callback, void *userdata);

/// Asked before a socket is opened: `address` is the numeric address libcurl is about to
/// connect to and `port` its port (the proxy's for a connection to a proxy; "" and 0 for a
/// family other than IPv4 and IPv6). Returns non-zero to let the connection be made, zero to
/// refuse it unopened.
typedef int (*fetchd_curl_admit_callback)(void *userdata, const char *address, int port);

/// What the open-socket callback asks before opening a socket; `admit` NULL admits every address.
typedef struct {
    /// The check; NULL admits every address.
    fetchd_curl_admit_callback admit;
    /// Passed to `admit`.
    void *userdata;
} fetchd_curl_socket_gate;

/// Opens every socket of the handle with SOCK_CLOEXEC (CURLOPT_OPENSOCKETFUNCTION; libcurl
/// opens them without it, so a child started meanwhile would inherit its connections), once
/// `gate` (CURLOPT_OPENSOCKETDATA; it must outlive the transfer, NULL for none) admitted the
/// address. A refused address fails the connection attempt as CURLE_COULDNT_CONNECT.
CURLcode fetchd_curl_set_open_socket_gate(CURL *handle, const fetchd_curl_socket_gate *gate);

/// Reads a long-valued info (CURLINFO_RESPONSE_CODE, ...).
CURLcode fetchd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
/// Reads a string-valued info (CURLINFO_EFFECTIVE_URL, CURLINFO_CONTENT_TYPE, ...).
CURLcode fetchd_curl_getinfo_string(CURL *handle, CURLINFO info, const char **value);
/// Reads a curl_off_t-valued info (CURLINFO_TOTAL_TIME_T, ...).
CURLcode fetchd_curl_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);

/// Sets a long-valued multi option (CURLMOPT_MAX_TOTAL_CONNECTIONS, ...).
CURLMcode fetchd_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
/// Sets a long-valued share option (CURLSHOPT_SHARE with a CURL_LOCK_DATA_* value).
CURLSHcode fetchd_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value);
/// Reads the result code of a finished transfer from a CURLMSG_DONE message (a C union member).
CURLcode fetchd_curl_msg_result(const CURLMsg *message);

/// Parses `url` with libcurl's URL API (`curl_url_set` with `flags`) and copies its scheme,
/// host and port into the buffers, NUL-terminated; any may be NULL to skip it. The port is read
/// with `port_flags`: CURLU_DEFAULT_PORT gives the scheme's default when none is written, 0
/// leaves it empty then. Returns the parse's code, or CURLUE_OUT_OF_MEMORY / CURLUE_NO_HOST
/// (no host, or a buffer too small).
CURLUcode fetchd_curl_url_parts(const char *url, unsigned int flags, unsigned int port_flags,
                                char *scheme, size_t scheme_capacity, char *host, size_t host_capacity,
                                char *port, size_t port_capacity);

#endif
