#include "CSystemdDraft.h"
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

int fetchd_bus_draft_new(const char *member, sd_bus_message **message) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0) return -errno;
    sd_bus *bus = NULL;
    int r = sd_bus_new(&bus);
    if (r >= 0) r = sd_bus_set_fd(bus, pair[0], pair[0]);
    if (r >= 0) {
        pair[0] = -1;  // the bus's now
        r = sd_bus_start(bus);
    }
    if (r >= 0) r = sd_bus_message_new_method_call(bus, message, "org.fetchd.Fetchd1", "/org/fetchd/Fetchd1",
                                                   "org.fetchd.Fetchd1", member);
    // The message holds the bus; the peer end is never read.
    sd_bus_unref(bus);
    if (pair[0] >= 0) close(pair[0]);
    close(pair[1]);
    return r < 0 ? r : 0;
}

int fetchd_bus_draft_append_string(sd_bus_message *message, char type, const char *value) {
    return sd_bus_message_append_basic(message, type, value);
}

int fetchd_bus_draft_append_fixed(sd_bus_message *message, char type, const void *value) {
    return sd_bus_message_append_basic(message, type, value);
}

int fetchd_bus_draft_open(sd_bus_message *message, char type, const char *contents) {
    return sd_bus_message_open_container(message, type, contents);
}

int fetchd_bus_draft_close(sd_bus_message *message) { return sd_bus_message_close_container(message); }

int fetchd_bus_draft_seal(sd_bus_message *message) {
    int r = sd_bus_message_seal(message, 1, 0);
    return r < 0 ? r : sd_bus_message_rewind(message, 1);
}
