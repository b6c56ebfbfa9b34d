#include <string.h>
#include "CCurlShim.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

CURLcode fetchd_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode fetchd_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode fetchd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode fetchd_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode fetchd_curl_set_write_callback(CURL *handle, fetchd_curl_data_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

CURLcode fetchd_curl_set_header_callback(CURL *handle, fetchd_curl_data_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

CURLcode fetchd_curl_set_progress_callback(CURL *handle, fetchd_curl_progress_callback callback) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
}

CURLcode fetchd_curl_set_prereq_callback(CURL *handle, fetchd_curl_prereq_callback callback, void *userdata) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_PREREQDATA, userdata);
}

CURLcode fetchd_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode fetchd_curl_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode fetchd_curl_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLMcode fetchd_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

CURLSHcode fetchd_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

CURLcode fetchd_curl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

/* libcurl (7.88) opens its sockets without SOCK_CLOEXEC; a process started by anything else
   in fetchd's process (a Swift handler's Process, a library) would inherit every connection
   open at that moment and hold it open after libcurl closed it. So fetchd opens them, with the
   flag in the one socket() call: no child started from another thread between socket() and a
   later fcntl() can inherit one.
   The gate, when there is one, is asked first with the numeric address and port libcurl is
   about to connect to (the proxy's, when the connection is to a proxy): a refused address gets no
   socket, so not even a SYN reaches it. An address of another family (fetchd asks for none)
   is passed as "", which names no address at all. */
static curl_socket_t fetchd_curl_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    const fetchd_curl_socket_gate *gate = clientp;
    if (gate && gate->admit) {
        char text[INET6_ADDRSTRLEN] = "";
        const void *bytes = NULL;
        int port = 0;
        if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
            const struct sockaddr_in *v4 = (const struct sockaddr_in *)(const void *)&address->addr;
            bytes = &v4->sin_addr;
            port = ntohs(v4->sin_port);
        } else if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
            const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)(const void *)&address->addr;
            bytes = &v6->sin6_addr;
            port = ntohs(v6->sin6_port);
        }
        if (bytes && !inet_ntop(address->family, bytes, text, sizeof text)) text[0] = 0;
        if (!gate->admit(gate->userdata, text, port)) return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

CURLcode fetchd_curl_set_open_socket_gate(CURL *handle, const fetchd_curl_socket_gate *gate) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, fetchd_curl_open_socket);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, (void *)gate);
}

static CURLUcode copy_part(CURLU *handle, CURLUPart which, unsigned int flags, char *buffer, size_t capacity) {
    if (!buffer) return CURLUE_OK;
    char *value = NULL;
    CURLUcode code = curl_url_get(handle, which, &value, flags);
    if (code != CURLUE_OK) return code;
    size_t length = strlen(value);
    if (length >= capacity) code = CURLUE_NO_HOST;
    else memcpy(buffer, value, length + 1);
    curl_free(value);
    return code;
}

CURLUcode fetchd_curl_url_parts(const char *url, unsigned int flags, unsigned int port_flags,
                                char *scheme, size_t scheme_capacity, char *host, size_t host_capacity,
                                char *port, size_t port_capacity) {
    CURLU *handle = curl_url();
    if (!handle) return CURLUE_OUT_OF_MEMORY;
    CURLUcode code = curl_url_set(handle, CURLUPART_URL, url, flags);
    if (code == CURLUE_OK) code = copy_part(handle, CURLUPART_SCHEME, 0, scheme, scheme_capacity);
    if (code == CURLUE_OK) code = copy_part(handle, CURLUPART_HOST, 0, host, host_capacity);
    /* CURLU_DEFAULT_PORT: http://h and http://h:80 are one origin. Without it, a URL with no
       port gives CURLUE_NO_PORT, which leaves `port` empty. */
    if (code == CURLUE_OK) {
        code = copy_part(handle, CURLUPART_PORT, port_flags, port, port_capacity);
        if (code == CURLUE_NO_PORT && port && port_capacity > 0) { port[0] = 0; code = CURLUE_OK; }
    }
    curl_url_cleanup(handle);
    return code;
}
