namespace Crosscode.Cappy
{
    /// <summary>The Cappy adapter protocol's names and limits (docs/adapter-protocol.md).</summary>
    public static class Wire
    {
        /// <summary>The protocol version this core speaks.</summary>
        public const int ProtocolVersion = 1;

        /// <summary>The most bytes of one message, either direction.</summary>
        public const int MaxMessageBytes = 4 << 20;
        /// <summary>The most decoded bytes of an inline replay.</summary>
        public const int MaxInlineReplayBytes = 1 << 20;
        /// <summary>The most decoded bytes of one frame.</summary>
        public const int MaxFrameBytes = 1 << 20;
        /// <summary>The widest or tallest frame, in pixels.</summary>
        public const int MaxFrameSide = 4096;
        /// <summary>The most bytes of an inspect answer's JSON.</summary>
        public const int MaxInspectBytes = 256 << 10;
        /// <summary>The longest inspect query.</summary>
        public const int MaxInspectQuery = 4096;
        /// <summary>The most bytes of a summary's JSON the controller keeps.</summary>
        public const int MaxSummaryBytes = 64 << 10;
        /// <summary>The longest step, in ms of simulation time.</summary>
        public const double MaxStepMs = 10000;
        /// <summary>The most actions a game declares.</summary>
        public const int MaxActions = 256;
        /// <summary>The most inputs one step carries.</summary>
        public const int MaxStepActions = 64;
        /// <summary>The longest action name, in bytes.</summary>
        public const int MaxActionNameBytes = 128;
        /// <summary>The longest action description, in bytes.</summary>
        public const int MaxActionDescBytes = 1024;
        /// <summary>The longest text a text action types, in bytes.</summary>
        public const int MaxActionTextBytes = 4096;
        /// <summary>The longest id (op, scenario, parameter), in bytes.</summary>
        public const int MaxIdBytes = 256;
        /// <summary>The longest step or inspect id, in bytes.</summary>
        public const int MaxStepIdBytes = 64;
        /// <summary>The longest event name, in bytes.</summary>
        public const int MaxEventNameBytes = 256;
        /// <summary>The longest free text (descriptions, messages), in bytes.</summary>
        public const int MaxTextBytes = 64 << 10;
        /// <summary>The slowest and fastest presentation timeScale.</summary>
        public const double MinTimeScale = 0.1, MaxTimeScale = 4;
        /// <summary>The lowest and highest frame rate a controller asks for.</summary>
        public const double MinFps = 0.1, MaxFps = 30;
        /// <summary>The largest seed (2^53 - 1: JavaScript and GDScript numbers hold it exactly).</summary>
        public const double MaxSeed = 9007199254740991;

        /// <summary>The environment variable of the controller's endpoint.</summary>
        public const string EndpointEnv = "CAPPY_ENDPOINT";
        /// <summary>The environment variable of the session token.</summary>
        public const string TokenEnv = "CAPPY_SESSION_TOKEN";
        /// <summary>The environment variable of the launch's seed.</summary>
        public const string SeedEnv = "CAPPY_SEED";

        /// <summary>The image types of frames.</summary>
        public const string MimeJpeg = "image/jpeg", MimePng = "image/png";
    }

    /// <summary>Capability names of hello.</summary>
    public static class Capability
    {
        public const string Scenarios = "scenarios";
        public const string FreeformRecording = "freeform_recording";
        public const string Replay = "replay";
        public const string TimeScale = "time_scale";
        public const string AlternateCameras = "alternate_cameras";
        public const string Frames = "frames";
        public const string Input = "input";
        public const string Inspect = "inspect";
        public const string Seed = "seed";
        public const string ConfigEvents = "config_events";
        public const string ResetsItself = "resets_itself";
    }

    /// <summary>Error codes of failed, step_refused and inspect answers.</summary>
    public static class Codes
    {
        public const string InvalidMessage = "PROTOCOL_INVALID_MESSAGE";
        public const string OutOfState = "PROTOCOL_OUT_OF_STATE";
        public const string CapabilityMissing = "CAPABILITY_MISSING";
        public const string OperationBusy = "OPERATION_BUSY";
        public const string ScenarioNotFound = "SCENARIO_NOT_FOUND";
        public const string InvalidParameters = "INVALID_PARAMETERS";
        public const string PresentationUnsupported = "PRESENTATION_UNSUPPORTED";
        public const string UnknownCamera = "UNKNOWN_CAMERA";
        public const string ReplayUnsupported = "REPLAY_UNSUPPORTED";
        public const string ReplayInvalid = "REPLAY_INVALID";
        public const string InvalidInput = "INVALID_INPUT";
        /// <summary>An exception of the game's code in an operation.</summary>
        public const string AdapterError = "ADAPTER_ERROR";
        public const string UnknownQuery = "UNKNOWN_QUERY";
        public const string InvalidQuery = "INVALID_QUERY";
        public const string InspectFailed = "INSPECT_FAILED";
        public const string ValueTooLarge = "VALUE_TOO_LARGE";
        /// <summary>The game was not where the replay expects it (another tick length).</summary>
        public const string SimulationChanged = "SIMULATION_CHANGED";
    }

    /// <summary>The kinds of action an agent sets.</summary>
    public static class ActionKind
    {
        public const string Button = "button";
        public const string Axis = "axis";
        public const string Axis2D = "axis2d";
        public const string Pointer = "pointer";
        public const string Text = "text";
    }
}
