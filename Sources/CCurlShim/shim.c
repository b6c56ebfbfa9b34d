#include "CCurlShim.h"

#include <fcntl.h>

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
   open at that moment and hold it open after libcurl closed it. */
static int fetchd_curl_close_on_exec(void *userdata, curl_socket_t fd, curlsocktype purpose) {
    (void)userdata;
    (void)purpose;
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) return CURL_SOCKOPT_ERROR;
    return CURL_SOCKOPT_OK;
}

CURLcode fetchd_curl_set_close_on_exec_sockets(CURL *handle) {
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, fetchd_curl_close_on_exec);
}
