"""The sources of bench/real_traces_listening.py: which export of which repository each
listening-NN trace is, and the evidence for its time zone."""

# format names:
#   spotify-streaminghistory: Spotify account-data export, a JSON list of
#       {"endTime": "YYYY-MM-DD HH:MM" (UTC), "msPlayed": N, ...}; the play starts msPlayed before
#       endTime; plays with msPlayed 0 are dropped.
#   lastfm-uts-csv: Last.fm scrobble CSV with a `uts` column (Unix seconds of the scrobble).
#   lastfmr-csv: CSV written from lastfmR::get_scrobbles(), `date` column "YYYY-MM-DD HH:MM:SS"
#       in GMT (the package sets tzone "GMT"); rows without a date are dropped.
# tz: ("zone", IANA name, why) | ("fixed", minutes east of UTC, why) | ("infer", None, why)
SOURCES = [
    dict(trace="listening-01", repo="glebanych/music-weather-project",
         commit="48a22c8a06f05ed1c9c006ae78b5400367045970",
         paths=["StreamingHistory_music_0.json", "StreamingHistory_music_1.json"],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Kyiv", "README states the owner's weather data is for Kyiv, Ukraine")),
    dict(trace="listening-02", repo="darshanjoshi16/Data-Analytics",
         commit="a27feb8aa43afaaa9038a9c4a8200435122245c3",
         paths=["StreamingHistory0.json", "StreamingHistory1.json"],
         format="spotify-streaminghistory",
         tz=("zone", "Asia/Kolkata", "data: the same export's Userdata.json records country IN "
             "(one zone)")),
    dict(trace="listening-03", repo="lukaszamora/spotify-history",
         commit="4a8f7790aa23a5a5e32e5f157174ea2d4cbbe280",
         paths=["StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "America/Chicago", "owner's site (lukaszamora.github.io about.md) states a "
             "recent Texas A&M graduate, Texas")),
    dict(trace="listening-04", repo="SachaWheeler/last_fm_stats",
         commit="59dc82105afe7610681bb97d5c6ea356b0b92d21",
         paths=["scrobbles.csv"],
         format="lastfm-uts-csv",
         tz=("zone", "Europe/London", "owner's weather repository README (gov.uk bank holidays, "
             "Celsius, British summer daylight) places the owner in the UK")),
    dict(trace="listening-05", repo="emrekkonakk/CS210_Project-Emre_Konak",
         commit="8d0f5756c9d49e202a0b26e683b88bc6a2424622",
         paths=["StreamingHistory_music_0.json", "StreamingHistory_music_1.json"],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Istanbul", "README gives the owner's Sabanci University (Istanbul) "
             "address")),
    dict(trace="listening-06", repo="cosmoduende/r-spotify-history-analysis",
         commit="3a29ea6cca1c824aedfc7599748b00d6172d7b25",
         paths=["StreamingHistory0.json"],
         format="spotify-streaminghistory",
         tz=("fixed", -6 * 60, "the repository's main.R shifts endTime by -6 h; applied as that "
             "fixed offset")),
    dict(trace="listening-07", repo="zsteve/metal-listening-analysis",
         commit="2c067d231ba806227566d437979946b04cf239b2",
         paths=["scrobbles.csv"],
         format="lastfmr-csv",
         tz=("infer", None, "no time zone stated")),
    dict(trace="listening-08", repo="katarzynajanicka/my-spotify-streaming-habits",
         commit="e1327265a87e830323f60e7aa9158a60b74541c8",
         paths=["StreamingHistory0.json", "StreamingHistory1.json"],
         format="spotify-streaminghistory",
         tz=("infer", None, "no time zone stated")),
    dict(trace="listening-09", repo="hl105/spotify-diary",
         commit="8d6a5948fdc5d2393949394a77db4a9060c981cf",
         paths=["StreamingHistory_music_0.json", "StreamingHistory_music_1.json"],
         format="spotify-streaminghistory",
         tz=("infer", None, "no time zone stated")),
    dict(trace="listening-10", repo="chadallison/spotify",
         commit="21f81986530e103200d8cd50ce996dfe34ad476a",
         paths=["StreamingHistory0.json", "StreamingHistory1.json", "StreamingHistory2.json"],
         format="spotify-streaminghistory",
         tz=("fixed", -6 * 60, "the repository's spotify.rmd shifts endTime by -6 h; applied as "
             "that fixed offset")),
    dict(trace="listening-11", repo="AbhinavGor/Spotify-Data-Visualization",
         commit="820282292818788d3e4f3aa32f2c652eda6c3698",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "Asia/Kolkata", "data: the same export's Userdata.json records country IN "
             "(one zone)")),
    dict(trace="listening-12", repo="Arthur-Chevron/spotify-data",
         commit="770d8c820df7c29a1d470f4cf644ea5202e0a7ac",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Paris", "data: the same export's Userdata.json records country FR "
             "(one zone)")),
    dict(trace="listening-13", repo="GuillaumeCld/spotify_playlist",
         commit="3574c5ac216ac0c9d85c33c82678655a9295469c",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(2)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Paris", "data: the same export's Userdata.json records country FR "
             "(one zone)")),
    dict(trace="listening-14", repo="LucasTakanori/Spotistats",
         commit="abc3904a572d6df26d88dd1337e8d4673a3036a1",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Madrid", "data: the same export's Userdata.json records country ES "
             "(Europe/Madrid, Africa/Ceuta, Atlantic/Canary); the owner's commits of May 2023 are "
             "stamped +02:00, the peninsula's summer offset, not the Canaries' +01:00")),
    dict(trace="listening-15", repo="RomainLeclair/MySpotifyData",
         commit="715f81c157f75b73b0c90b340ae35415f197df4d",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(3)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Paris", "data: the same export's Userdata.json records country FR "
             "(one zone)")),
    dict(trace="listening-16", repo="asmagr/Data-Visualization-",
         commit="3f2b69aa9dd95204e02d7ffa1f7f9221d779dd1a",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Paris", "data: the same export's Userdata.json records country FR "
             "(one zone)")),
    dict(trace="listening-17", repo="beatrizcm01/my-life-playlist",
         commit="025f22c2482c746643feb0c2e4407935aa11117e",
         paths=["MyData/StreamingHistory0.json"],
         format="spotify-streaminghistory",
         tz=("zone", "America/Sao_Paulo", "data: the same export's Userdata.json records country "
             "BR; the owner's commits are stamped -03:00, and Brazil has had no DST since 2019, "
             "so every -03:00 Brazilian zone gives the same offsets for these 2022 plays")),
    dict(trace="listening-18", repo="candrasc/Spotify_Artist_Recommender",
         commit="d30f8fb5d3f27d63c55592e3b202683399b91f13",
         paths=["MyData/StreamingHistory0.json"],
         format="spotify-streaminghistory",
         tz=("zone", "America/Toronto", "data: the same export's Userdata.json records country "
             "CA with a K1Y postal code (Ottawa, Ontario); the owner's commits are stamped "
             "-04:00 in summer and -05:00 in winter (Eastern)")),
    dict(trace="listening-19", repo="lucasfpineram/Final_Pinera_Romero_Cobian",
         commit="81db138f9f08fd5879c4ba7c91bf7f2abd95ac01",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(2)],
         format="spotify-streaminghistory",
         tz=("zone", "America/Argentina/Buenos_Aires", "data: the same export's Userdata.json "
             "records country AR; every Argentine zone has kept -03:00 without DST since 2009, so "
             "the choice changes no offset; the repository's commits are stamped -03:00")),
    dict(trace="listening-20", repo="marina-sam14/SpotifyValenceAnalysis",
         commit="d40d8585b8b524a6681d1bac187f8f4d75950beb",
         paths=["MyData/StreamingHistory0.json"],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Athens", "data: the same export's Userdata.json records country GR "
             "(one zone)")),
    dict(trace="listening-21", repo="muskan123-b/spotify-mood-based-clustering",
         commit="b939480b0f5031aecd74362d49a75e431b5ab5f9",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "Asia/Kolkata", "data: the same export's Userdata.json records country IN "
             "(one zone)")),
    dict(trace="listening-22", repo="ozturkfemre/spotify.app",
         commit="993cf0ad66926a3c61213ed6cb060a96daaaed84",
         paths=["MyData/StreamingHistory0.json"],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Istanbul", "data: the same export's Userdata.json records country TR "
             "(one zone)")),
    dict(trace="listening-23", repo="padraigmk/Spotify_Deep_Dive",
         commit="1790420e146e4010548ac5cb36afb6aae1a44eaf",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(2)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Dublin", "data: the same export's Userdata.json records country IE "
             "(one zone)")),
    dict(trace="listening-24", repo="SelahattinGngr/JavaScript",
         commit="d44b0ea543df69cf50ec6514eeac51e0fa6a556d",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(2)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Istanbul", "data: the same export's Userdata.json records country TR "
             "(one zone)")),
    dict(trace="listening-25", repo="sstewart0/spotifyDash",
         commit="80708231902d283b42449fbe0837f5ff0d3b704c",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(4)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/London", "data: the same export's Userdata.json records country GB "
             "(one zone)")),
    dict(trace="listening-26", repo="manuelgirbal/spotify",
         commit="450a540ca645ca76690f1f1a34534c8c61ce5249",
         paths=["MyData/StreamingHistory0.json"],
         format="spotify-streaminghistory",
         tz=("zone", "America/Argentina/Buenos_Aires", "data: the same export's Userdata.json "
             "records country AR, postal code 1663 (Greater Buenos Aires); every Argentine zone "
             "has kept -03:00 without DST since 2009; the owner's commits are stamped -03:00")),
    dict(trace="listening-27", repo="bang-a-coder/spotify-data",
         commit="aa875cf3693b58d579db9543929524d39f9bc7ec",
         paths=["MyData/StreamingHistory%d.json" % i for i in range(3)],
         format="spotify-streaminghistory",
         tz=("zone", "Europe/Amsterdam", "data: the same export's Userdata.json records country NL "
             "(one zone)")),
]
