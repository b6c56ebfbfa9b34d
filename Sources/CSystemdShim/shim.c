#include "CSystemdShim.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

static void copy_error(const sd_bus_error *error, int r, char *text, size_t capacity) {
    if (!text || capacity == 0) return;
    const char *message = (error && error->message) ? error->message : strerror(-r);
    strncpy(text, message, capacity - 1);
    text[capacity - 1] = '\0';
}

// Waits until `bus` has authenticated and said Hello, for at most `timeout_usec`. sd-bus would
// wait for that inside the first blocking call, under its own fixed authentication timeout
// (90 s), whatever the method call timeout: a bus that accepts and never answers would hold the
// caller that long.
static int wait_until_ready(sd_bus *bus, uint64_t timeout_usec) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t start = (uint64_t)now.tv_sec * 1000000ULL + (uint64_t)now.tv_nsec / 1000ULL;
    for (;;) {
        int r = sd_bus_is_ready(bus);
        if (r != 0) return r < 0 ? r : 0;
        while ((r = sd_bus_process(bus, NULL)) > 0) {}
        if (r < 0) return r;
        if (sd_bus_is_ready(bus) > 0) return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t elapsed = (uint64_t)now.tv_sec * 1000000ULL + (uint64_t)now.tv_nsec / 1000ULL - start;
        if (elapsed >= timeout_usec) return -ETIMEDOUT;
        r = sd_bus_wait(bus, timeout_usec - elapsed);
        if (r < 0) return r;
    }
}

// A bus client on `address` with every timeout set before it starts, ready when this returns.
static int open_ready(const char *address, uint64_t method_timeout_usec, sd_bus **bus) {
    sd_bus *opened = NULL;
    int r = sd_bus_new(&opened);
    if (r >= 0) r = sd_bus_set_address(opened, address);
    if (r >= 0) r = sd_bus_set_bus_client(opened, 1);
    if (r >= 0) r = sd_bus_set_method_call_timeout(opened, method_timeout_usec);
    if (r >= 0) r = sd_bus_start(opened);
    if (r >= 0) r = wait_until_ready(opened, method_timeout_usec);
    if (r < 0) {
        sd_bus_close_unref(opened);  // not flush: the peer may not be reading
        return r;
    }
    *bus = opened;
    return 0;
}

int fetchd_bus_open_with_timeout(int user, uint64_t method_timeout_usec, sd_bus **bus) {
    if (user) {
        // The user bus: $DBUS_SESSION_BUS_ADDRESS, else the socket in $XDG_RUNTIME_DIR.
        const char *address = getenv("DBUS_SESSION_BUS_ADDRESS");
        if (address && *address) return open_ready(address, method_timeout_usec, bus);
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        if (!runtime || !*runtime) return -ENOMEDIUM;
        char path[4096];
        if (snprintf(path, sizeof(path), "unix:path=%s/bus", runtime) >= (int)sizeof(path)) return -ENAMETOOLONG;
        return open_ready(path, method_timeout_usec, bus);
    }
    // The system bus, as sd_bus_open_system finds it.
    const char *address = getenv("DBUS_SYSTEM_BUS_ADDRESS");
    return open_ready(address && *address ? address : "unix:path=/run/dbus/system_bus_socket", method_timeout_usec, bus);
}

int fetchd_bus_open_address(const char *address, uint64_t method_timeout_usec, sd_bus **bus) {
    return open_ready(address, method_timeout_usec, bus);
}

int fetchd_bus_add_match(sd_bus *bus, const char *rule, sd_bus_message_handler_t handler, void *userdata) {
    // A floating slot (NULL): the match lives as long as the bus, which frees it.
    return sd_bus_add_match(bus, NULL, rule, handler, userdata);
}

static void copy_text(const char *source, char *text, size_t capacity) {
    if (!text || capacity == 0) return;
    strncpy(text, source ? source : "", capacity - 1);
    text[capacity - 1] = '\0';
}

int fetchd_bus_call(sd_bus *bus, sd_bus_message *call, sd_bus_message **reply, char *error_name,
                    size_t error_name_capacity, char *error_text, size_t error_capacity) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    *reply = NULL;
    int r = sd_bus_call(bus, call, 0, &error, reply);
    if (r < 0) {
        copy_text(error.name, error_name, error_name_capacity);
        copy_error(&error, r, error_text, error_capacity);
    }
    sd_bus_error_free(&error);
    return r;
}

int fetchd_bus_message_read_bool(sd_bus_message *message, int *value) {
    return sd_bus_message_read(message, "b", value);
}

int fetchd_bus_message_read_string(sd_bus_message *message, char type, const char **value) {
    if (type != 's' && type != 'o' && type != 'g') return -EINVAL;
    return sd_bus_message_read_basic(message, type, value);
}

int fetchd_bus_message_read_int64(sd_bus_message *message, char type, int64_t *value) {
    int r;
    switch (type) {
    case 'y': { uint8_t v; r = sd_bus_message_read(message, "y", &v); if (r > 0) *value = v; return r; }
    case 'n': { int16_t v; r = sd_bus_message_read(message, "n", &v); if (r > 0) *value = v; return r; }
    case 'q': { uint16_t v; r = sd_bus_message_read(message, "q", &v); if (r > 0) *value = v; return r; }
    case 'i': { int32_t v; r = sd_bus_message_read(message, "i", &v); if (r > 0) *value = v; return r; }
    case 'u': { uint32_t v; r = sd_bus_message_read(message, "u", &v); if (r > 0) *value = v; return r; }
    case 'x': { int64_t v; r = sd_bus_message_read(message, "x", &v); if (r > 0) *value = v; return r; }
    default: return -EINVAL;
    }
}

int fetchd_bus_message_read_uint64(sd_bus_message *message, uint64_t *value) {
    return sd_bus_message_read(message, "t", value);
}

int fetchd_bus_message_read_double(sd_bus_message *message, double *value) {
    return sd_bus_message_read(message, "d", value);
}

int fetchd_bus_message_enter(sd_bus_message *message, char type, const char *contents) {
    return sd_bus_message_enter_container(message, type, contents);
}

int fetchd_bus_message_exit(sd_bus_message *message) {
    return sd_bus_message_exit_container(message);
}

int fetchd_bus_message_peek(sd_bus_message *message, char *type, const char **contents) {
    return sd_bus_message_peek_type(message, type, contents);
}

int fetchd_bus_message_skip(sd_bus_message *message, const char *types) {
    return sd_bus_message_skip(message, types);
}
