#include "CSystemdShim.h"
#include <errno.h>
#include <string.h>

int fetchd_bus_open(int user, sd_bus **bus) {
    return user ? sd_bus_open_user(bus) : sd_bus_open_system(bus);
}

static void copy_error(const sd_bus_error *error, int r, char *text, size_t capacity) {
    if (!text || capacity == 0) return;
    const char *message = (error && error->message) ? error->message : strerror(-r);
    strncpy(text, message, capacity - 1);
    text[capacity - 1] = '\0';
}

int fetchd_bus_start_transient_timer(sd_bus *bus, const char *timer_name,
                                     const char *description, const char *on_calendar,
                                     uint64_t accuracy_usec, char *error_text, size_t error_capacity) {
    sd_bus_message *message = NULL, *reply = NULL;
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int r = sd_bus_message_new_method_call(bus, &message, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "StartTransientUnit");
    if (r < 0) goto finish;
    r = sd_bus_message_append(message, "ss", timer_name, "replace");
    if (r < 0) goto finish;
    r = sd_bus_message_open_container(message, 'a', "(sv)");
    if (r < 0) goto finish;
    r = sd_bus_message_append(message, "(sv)", "Description", "s", description);
    if (r < 0) goto finish;
    r = sd_bus_message_append(message, "(sv)", "AccuracyUSec", "t", accuracy_usec);
    if (r < 0) goto finish;
    // Once it has fired the timer goes away, so the next plan starts from a clean slate.
    r = sd_bus_message_append(message, "(sv)", "RemainAfterElapse", "b", 0);
    if (r < 0) goto finish;
    r = sd_bus_message_append(message, "(sv)", "TimersCalendar", "a(ss)", 1, "OnCalendar", on_calendar);
    if (r < 0) goto finish;
    r = sd_bus_message_close_container(message);
    if (r < 0) goto finish;
    r = sd_bus_message_append(message, "a(sa(sv))", 0);
    if (r < 0) goto finish;
    r = sd_bus_call(bus, message, 0, &error, &reply);
finish:
    if (r < 0) copy_error(&error, r, error_text, error_capacity);
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    sd_bus_message_unref(message);
    return r;
}

int fetchd_bus_stop_unit(sd_bus *bus, const char *unit_name, char *error_text, size_t error_capacity) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    int r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "StopUnit", &error, &reply, "ss", unit_name,
                               "replace");
    if (r < 0 && sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit")) r = 0;
    if (r < 0) copy_error(&error, r, error_text, error_capacity);
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    return r;
}
